"""HTTP only: routes, request parsing, dependencies. No SQL here."""
