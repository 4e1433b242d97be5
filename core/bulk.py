"""Set-based writes of thousands of rows in a few statements.

Django's ``bulk_update`` builds one ``CASE`` per field and row, and
``bulk_create`` builds a model instance per row; at the scheduler's scale
(thousands of jobs in one pass) both cost seconds. Here a row is a tuple:

- ``update_from_values``: ``UPDATE t SET … FROM (…) AS v WHERE t.id = v.c0``,
  the rows coming from one JSON parameter on PostgreSQL (however many rows)
  and from a ``VALUES`` list on SQLite (3.33+).
  Increments (``col = col + v``) keep the semantics of ``F()`` updates, so the
  database's CHECK constraints still refuse an over-commit.
- ``insert_rows``: ``INSERT … SELECT * FROM`` the same rows, optionally
  returning the new primary keys in row order (as ``bulk_create`` relies on).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from django.db import connection, connections, models

# Well under PostgreSQL's 65,535 and SQLite's 32,766 bound parameters per statement.
MAX_PARAMS = 10_000
# Rows per statement on PostgreSQL, where a batch is one JSON parameter.
MAX_JSON_ROWS = 20_000


def update_from_values(
    model: type[models.Model],
    *,
    rows: Sequence[Sequence],
    set_fields: Sequence[str],
    match_fields: Sequence[str] = (),
    increment: bool = False,
    returning: bool = False,
) -> list:
    """Update rows of ``model`` from ``rows`` = ``(pk, *match values, *set values)``.

    ``match_fields`` are extra conditions (``AND t.state = v.state``) so that a
    row that changed meanwhile is left alone; ``increment`` adds the values to
    the columns instead of setting them. With ``returning`` the updated primary
    keys come back (otherwise the number of rows updated, as a one-item list).
    """
    if not rows:
        return [] if returning else [0]
    table = _quote(model._meta.db_table)
    pk = model._meta.pk
    fields = [pk] + [model._meta.get_field(name) for name in (*match_fields, *set_fields)]
    aliases = _aliases(fields)
    keys = 1 + len(match_fields)
    assignments = ", ".join(
        f"{_quote(field.column)} = "
        + (f"{table}.{_quote(field.column)} + v.{alias}" if increment else f"v.{alias}")
        for field, alias in zip(fields[keys:], aliases[keys:], strict=True)
    )
    conditions = " AND ".join(
        f"{table}.{_quote(field.column)} = v.{alias}"
        for field, alias in zip(fields[:keys], aliases[:keys], strict=True)
    )
    suffix = f" RETURNING {table}.{_quote(pk.column)}" if returning else ""
    results: list = []
    total = 0
    with connection.cursor() as cursor:
        for source, params in _sources(fields, rows):
            sql = f"UPDATE {table} SET {assignments} FROM {source} WHERE {conditions}{suffix}"
            cursor.execute(sql, params)
            if returning:
                results.extend(row[0] for row in cursor.fetchall())
            else:
                total += cursor.rowcount
    return results if returning else [total]


def insert_rows(
    model: type[models.Model],
    *,
    fields: Sequence[str],
    rows: Sequence[Sequence],
    returning: bool = False,
) -> list[int]:
    """Insert ``rows`` (values in ``fields`` order); the new primary keys in row order.

    Fields with ``auto_now_add`` or defaults are not filled in: pass them.
    """
    if not rows:
        return []
    table = _quote(model._meta.db_table)
    model_fields = [model._meta.get_field(name) for name in fields]
    columns = ", ".join(_quote(field.column) for field in model_fields)
    suffix = f" RETURNING {_quote(model._meta.pk.column)}" if returning else ""
    keys: list[int] = []
    with connection.cursor() as cursor:
        for source, params in _sources(model_fields, rows):
            sql = f"INSERT INTO {table} ({columns}) SELECT * FROM {source}{suffix}"
            cursor.execute(sql, params)
            if returning:
                keys.extend(row[0] for row in cursor.fetchall())
    return keys


def lock_rows(model: type[models.Model], pks: Iterable[int]) -> None:
    """Lock these rows in primary-key order, so that two writers never deadlock.

    SQLite has one writer at a time already (transactions begin IMMEDIATE).
    """
    pks = sorted(set(pks))
    if not pks or connection.vendor != "postgresql":
        return
    list(model.objects.select_for_update().filter(pk__in=pks).order_by("pk").values_list("pk"))


def _aliases(fields: Sequence[models.Field]) -> list[str]:
    return [f"c{i}" for i in range(len(fields))]


def _sources(fields: Sequence[models.Field], rows: Sequence[Sequence]):
    """Per batch of rows: a FROM item ``v`` with columns ``c0, c1, …``, and its parameters."""
    aliases = _aliases(fields)
    if connection.vendor == "postgresql":
        yield from _json_sources(fields, rows, aliases)
        return
    preps = [_preparer(field) for field in fields]
    # SQLite names VALUES columns column1, column2, …; no column list on an alias.
    names = ", ".join(f"column{i + 1} AS {alias}" for i, alias in enumerate(aliases))
    placeholder = "(" + ", ".join(["%s"] * len(fields)) + ")"
    batch_size = max(1, MAX_PARAMS // len(fields))
    for start in range(0, len(rows), batch_size):
        batch = rows[start : start + batch_size]
        params = [
            value if prep is None else prep(value)
            for row in batch
            for prep, value in zip(preps, row, strict=True)
        ]
        values = ", ".join([placeholder] * len(batch))
        yield f"(SELECT {names} FROM (VALUES {values})) AS v", params


def _json_sources(fields: Sequence[models.Field], rows: Sequence[Sequence], aliases: list[str]):
    """PostgreSQL: the rows as one JSON array of arrays, taken apart by the server.

    One parameter per batch, serialised by the C JSON encoder: much cheaper
    than adapting thousands of values (or one array per column) in Python.
    """
    columns = ", ".join(
        f"CAST(e -> {i} AS jsonb) AS {alias}"
        if isinstance(field, models.JSONField)
        else f"CAST(e ->> {i} AS {_cast_type(field)}) AS {alias}"
        for i, (field, alias) in enumerate(zip(fields, aliases, strict=True))
    )
    moments = [i for i, field in enumerate(fields) if isinstance(field, models.DateTimeField)]
    for start in range(0, len(rows), MAX_JSON_ROWS):
        batch = rows[start : start + MAX_JSON_ROWS]
        if moments:
            batch = [_iso_moments(row, moments) for row in batch]
        yield (
            f"(SELECT {columns} FROM json_array_elements(CAST(%s AS json)) AS e) AS v",
            [json.dumps(batch)],
        )


def _iso_moments(row: Sequence, moments: list[int]) -> list:
    row = list(row)
    for i in moments:
        if row[i] is not None:
            row[i] = row[i].isoformat()
    return row


def _cast_type(field: models.Field) -> str:
    if isinstance(field, models.ForeignKey):
        field = field.target_field
    if isinstance(field, models.IntegerField):  # also Positive*, Small*, Big*, AutoField
        return "bigint"
    return field.db_type(connection)


# Values of these fields reach the database as they are (ints, strings, booleans).
PLAIN_FIELDS = (models.IntegerField, models.CharField, models.TextField, models.BooleanField)


def _preparer(field: models.Field):
    """A function turning a Python value into a database value; None if none is needed."""
    target = field.target_field if isinstance(field, models.ForeignKey) else field
    if isinstance(target, PLAIN_FIELDS):
        return None
    real_connection = connections[connection.alias]  # not the proxy, once per column

    def prepare(value):
        return target.get_db_prep_value(value, real_connection, prepared=False)

    return prepare


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)
