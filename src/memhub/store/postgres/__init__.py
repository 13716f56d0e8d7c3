"""The PostgreSQL back end: :class:`~memhub.store.postgres.store.store.PostgresStore` and the SQL
of each concern, one module each; the only place memhub writes SQL."""
