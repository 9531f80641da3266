"""The record model: registry of types, JSON Schemas, validation, derived fields, the record service."""
