"""Authentication and authorisation: passwords, sessions, permissions."""
