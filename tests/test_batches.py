"""core.batches: what a batch of changes asks for, handed over once at its end."""

from core.batches import batched, defer


def test_outside_a_batch_each_item_is_handed_over_at_once():
    calls = []
    defer(calls.append, 1)
    defer(calls.append, 2)
    assert calls == [[1], [2]]


def test_within_a_batch_each_flush_gets_its_items_in_one_call_at_the_end():
    firsts, seconds = [], []
    with batched():
        defer(firsts.append, 1)
        with batched():  # nested: the outer batch collects
            defer(seconds.append, "a")
            defer(firsts.append, 2)
        assert firsts == seconds == []
    assert (firsts, seconds) == ([[1, 2]], [["a"]])


def test_a_failing_flush_is_logged_and_stops_no_other(caplog):
    handed = []

    def broken(items):
        raise ConnectionError("broker down")

    with batched():
        defer(broken, 1)
        defer(handed.append, 2)
    assert handed == [[2]]
    assert "handing over a batch of 1" in caplog.text and "broker down" in caplog.text
