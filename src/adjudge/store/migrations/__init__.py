"""Alembic migrations of the store's schema; :func:`adjudge.store.migrate` applies them."""
