"""Fonds: an archival records backend with an ArchivesSpace-compatible HTTP API."""

__version__ = "0.1.0"
