"""The REST API (FastAPI). Only this package imports FastAPI; services never do."""
