"""Adapters that present memhub to other frameworks; each imports its framework only when used."""
