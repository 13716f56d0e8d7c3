"""The in-process reference back end (``memory://``):
:class:`~memhub.store.inmemory.store.store.InMemoryStore` and its tables, queue and text search."""
