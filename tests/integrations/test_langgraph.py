"""memhub's LangGraph store against LangGraph's documented ``BaseStore`` behaviour.

LangGraph ships no store conformance suite (``langgraph-checkpoint-conformance`` covers
checkpointers only), so the same behaviour tests run on LangGraph's own stores (the
references: ``InMemoryStore``, and ``PostgresStore`` from ``langgraph-checkpoint-postgres`` on
the test's own PostgreSQL) and on ``MemhubStore`` over the real PostgreSQL and embedder.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import pytest
from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from memhub import AsyncMemory, MemhubSettings, Memory
from memhub.integrations.langgraph import MemhubStore


@pytest.fixture(params=["langgraph-inmemory", "langgraph-postgres", "memhub"])
def store(
    request: pytest.FixtureRequest, settings: MemhubSettings, db_url: str
) -> Iterator[BaseStore]:
    if request.param == "langgraph-inmemory":
        yield InMemoryStore()
        return
    if request.param == "langgraph-postgres":
        postgres_store = pytest.importorskip("langgraph.store.postgres")  # the dev extra has it
        PostgresStore = postgres_store.PostgresStore

        with PostgresStore.from_conn_string(db_url) as postgres:
            postgres.setup()
            yield postgres
        return
    with Memory(settings=settings) as memory:
        yield MemhubStore(memory)


@pytest.fixture(params=["langgraph-postgres", "memhub"])
def ttl_store(
    request: pytest.FixtureRequest, settings: MemhubSettings, db_url: str
) -> Iterator[BaseStore]:
    """Stores with TTLs (InMemoryStore has none): items live 3 s unless read."""
    ttl = {"default_ttl": 0.05, "refresh_on_read": True}
    if request.param == "langgraph-postgres":
        postgres_store = pytest.importorskip("langgraph.store.postgres")
        # omit_expired: PostgresStore otherwise returns expired items until its sweeper runs;
        # memhub never returns them.
        config = {**ttl, "omit_expired": True}
        with postgres_store.PostgresStore.from_conn_string(db_url, ttl=config) as postgres:
            postgres.setup()
            yield postgres
        return
    with Memory(settings=settings) as memory:
        yield MemhubStore(memory, ttl=ttl)


def _at(started: float, seconds: float) -> None:
    time.sleep(max(0.0, started + seconds - time.monotonic()))


def test_an_item_past_its_ttl_is_gone(ttl_store: BaseStore) -> None:
    # Only sleeps that end after a stamp are timed (sleeping longer is always safe); the
    # check that the item is still there comes right after the put, with its 3 s ahead.
    assert ttl_store.supports_ttl
    ns = ("ttl",)
    ttl_store.put(ns, "kept", {"v": 1}, ttl=None)  # no TTL: never expires
    ttl_store.put(ns, "short", {"v": 2})  # default_ttl: 3 s
    stamped = time.monotonic()  # the expiry was stamped before this
    assert ttl_store.get(ns, "short", refresh_ttl=False) is not None
    assert {i.key for i in ttl_store.search(ns, refresh_ttl=False)} == {"kept", "short"}
    _at(stamped, 3.5)
    assert ttl_store.get(ns, "short", refresh_ttl=False) is None
    assert [i.key for i in ttl_store.search(ns, refresh_ttl=False)] == ["kept"]


def test_reading_an_item_renews_its_ttl(settings: MemhubSettings) -> None:
    # memhub only: PostgresStore keeps ttl_minutes as an INT, so a refresh of a TTL under a
    # minute (all a test can wait for) renews it to 0 there. Read 3.5 s after the put (2.5 s
    # before it would expire), "read" outlives "unread" by 3.5 s: the checks fall in between.
    with MemhubStore(settings=settings, ttl={"default_ttl": 0.1}) as store:  # 6 s
        store.put(("t",), "warm", {"v": 0}, ttl=None)  # loads the embedder
        store.put(("t",), "read", {"v": 1})
        store.put(("t",), "unread", {"v": 2})
        stamped = time.monotonic()  # both expiries were stamped before this
        _at(stamped, 3.5)
        assert store.get(("t",), "read") is not None  # renewed: 6 s from now
        renewed = time.monotonic()
        _at(stamped, 6.3)
        assert store.get(("t",), "unread") is None  # its 6 s are over
        assert store.get(("t",), "read", refresh_ttl=False) is not None
        _at(renewed, 6.5)
        assert store.get(("t",), "read") is None


def test_search_without_a_query_lists_by_recency(store: BaseStore) -> None:
    # Documented as it is: memhub and PostgresStore newest first, InMemoryStore oldest first.
    for key in ("first", "second", "third"):
        store.put(("order",), key, {"k": key})
        time.sleep(0.01)
    keys = [i.key for i in store.search(("order",))]
    oldest_first = isinstance(store, InMemoryStore)
    assert keys == (["first", "second", "third"] if oldest_first else ["third", "second", "first"])


def test_put_get_update_delete(store: BaseStore) -> None:
    ns = ("users", "u1")
    assert store.get(ns, "prefs") is None
    store.put(ns, "prefs", {"food": "pizza", "n": 1})
    first = store.get(ns, "prefs")
    assert isinstance(first, Item)
    assert (first.namespace, first.key, first.value) == (ns, "prefs", {"food": "pizza", "n": 1})
    time.sleep(0.01)
    store.put(ns, "prefs", {"food": "sushi", "n": 2})
    second = store.get(ns, "prefs")
    assert second is not None and second.value == {"food": "sushi", "n": 2}
    assert second.updated_at > first.updated_at  # (InMemoryStore also renews created_at)
    store.delete(ns, "prefs")
    assert store.get(ns, "prefs") is None
    store.delete(ns, "prefs")  # deleting what is gone is fine


def test_namespaces_keep_equal_keys_apart(store: BaseStore) -> None:
    store.put(("a",), "k", {"v": "in a"})
    store.put(("a", "b"), "k", {"v": "in a/b"})
    store.put(("c",), "k", {"v": "in a"})  # the same value elsewhere is its own item
    assert store.get(("a",), "k").value == {"v": "in a"}  # type: ignore[union-attr]
    assert store.get(("a", "b"), "k").value == {"v": "in a/b"}  # type: ignore[union-attr]
    assert store.get(("c",), "k").value == {"v": "in a"}  # type: ignore[union-attr]


def test_search_by_prefix_filter_and_pages(store: BaseStore) -> None:
    for n in range(5):
        store.put(("docs", f"d{n % 2}"), f"k{n}", {"n": n, "status": "active" if n < 3 else "old"})
    store.put(("other",), "x", {"n": 99, "status": "active"})
    assert {i.key for i in store.search(("docs",), limit=10)} == {f"k{n}" for n in range(5)}
    assert {i.key for i in store.search(("docs", "d0"), limit=10)} == {"k0", "k2", "k4"}
    active = store.search(("docs",), filter={"status": "active"}, limit=10)
    assert {i.key for i in active} == {"k0", "k1", "k2"}
    big = store.search(("docs",), filter={"n": {"$gte": 3}}, limit=10)
    assert {i.key for i in big} == {"k3", "k4"}
    assert {i.key for i in store.search(("docs",), filter={"n": {"$ne": 0}}, limit=10)} == {
        "k1",
        "k2",
        "k3",
        "k4",
    }
    pages = [store.search(("docs",), limit=2, offset=o) for o in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 1]
    assert len({i.key for p in pages for i in p}) == 5
    assert store.search(("nothing",), limit=10) == []


def test_list_namespaces(store: BaseStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "x"),
        ("z", "b", "c"),
    ]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("z", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("z", "b", "c"),
    ]
    assert store.list_namespaces(max_depth=1) == [("a",), ("z",)]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "b", "d")]


def test_batch_answers_each_operation_in_place(store: BaseStore) -> None:
    # Reads in a batch that also writes may see the store before or after the writes
    # (InMemoryStore applies puts last), so writes and reads go in separate batches.
    assert store.batch([PutOp(("t",), "one", {"text": "first"}), PutOp(("t",), "two", {})]) == [
        None,
        None,
    ]
    got, found, spaces, missing = store.batch(
        [GetOp(("t",), "one"), SearchOp(("t",), limit=5), ListNamespacesOp(), GetOp(("t",), "x")]
    )
    assert isinstance(got, Item) and got.value == {"text": "first"}
    assert sorted(i.key for i in found) == ["one", "two"]  # type: ignore[union-attr]
    assert spaces == [("t",)] and missing is None
    store.batch([PutOp(("t",), "one", None)])
    assert store.batch([GetOp(("t",), "one")]) == [None]


# -- memhub only: meaning search, async use ------------------------------------------------


def test_query_search_ranks_by_meaning_and_words(settings: MemhubSettings) -> None:
    with Memory(settings=settings) as memory:
        store = MemhubStore(memory, index_fields=["text"])
        store.put(("mem", "ada"), "1", {"text": "Ada is allergic to peanuts.", "kind": "health"})
        store.put(("mem", "ada"), "2", {"text": "Ada's favourite city is Lisbon.", "kind": "fun"})
        store.put(("mem", "bob"), "3", {"text": "Bob is allergic to cats.", "kind": "health"})
        hits = store.search(("mem", "ada"), query="Which foods must Ada avoid?", limit=2)
        assert hits[0].key == "1" and hits[0].score is not None and hits[0].score > 0
        assert all(h.namespace == ("mem", "ada") for h in hits)
        filtered = store.search(("mem",), query="allergy", filter={"kind": "health"}, limit=5)
        assert {h.key for h in filtered} == {"1", "3"}


def test_bad_namespaces_are_refused(settings: MemhubSettings) -> None:
    with Memory(settings=settings) as memory:
        store = MemhubStore(memory)
        with pytest.raises(ValueError):
            store.put((), "k", {"v": 1})
        with pytest.raises(ValueError):
            store.put(("a.b",), "k", {"v": 1})


@pytest.fixture
async def async_store(settings: MemhubSettings) -> AsyncIterator[MemhubStore]:
    async with AsyncMemory(settings=settings) as memory:
        yield MemhubStore(memory, user_id="ada")


async def test_async_api(async_store: MemhubStore) -> None:
    ns = ("notes",)
    await async_store.aput(ns, "a", {"text": "buy milk"})
    await async_store.aput(ns, "b", {"text": "call the plumber"})
    got = await async_store.aget(ns, "a")
    assert got is not None and got.value == {"text": "buy milk"}
    hits = await async_store.asearch(ns, query="plumbing repair", limit=1)
    assert [h.key for h in hits] == ["b"]
    assert await async_store.alist_namespaces() == [("notes",)]
    await async_store.adelete(ns, "a")
    assert await async_store.aget(ns, "a") is None


async def test_a_sync_memory_serves_async_callers_too(settings: MemhubSettings) -> None:
    with Memory(settings=settings) as memory:
        store = MemhubStore(memory)
        await store.aput(("x",), "k", {"v": 1})
        assert store.get(("x",), "k") is not None  # and the sync path sees it
        assert (await store.aget(("x",), "k")).value == {"v": 1}  # type: ignore[union-attr]


def test_a_compiled_graph_uses_the_store(settings: MemhubSettings) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        question: str
        answer: str

    def remember_then_recall(state: State, *, store: BaseStore) -> dict[str, str]:
        store.put(("memories", "ada"), "food", {"text": "Ada is allergic to peanuts."})
        hits = store.search(("memories", "ada"), query=state["question"], limit=1)
        return {"answer": hits[0].value["text"]}

    builder = StateGraph(State)
    builder.add_node("recall", remember_then_recall)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", END)
    with Memory(settings=settings) as memory:
        graph = builder.compile(store=MemhubStore(memory, index_fields=["text"]))
        out = graph.invoke({"question": "What must Ada not eat?", "answer": ""})
        assert out["answer"] == "Ada is allergic to peanuts."
        # An update is a memory update: newest first without a query, old text in history.
        store = MemhubStore(memory, index_fields=["text"])
        store.put(("memories", "ada"), "food", {"text": "Ada can eat peanuts again."})
        store.put(("memories", "ada"), "city", {"text": "Ada lives in Oslo."})
        assert [i.key for i in store.search(("memories",))] == ["city", "food"]
        (stored,) = memory.get_all(agent_id="langgraph", filters={"langgraph.key": "food"})[
            "results"
        ]
        events = [(e["event"], e["old_memory"]) for e in memory.history(stored["id"])]
        assert events[-1] == ("UPDATE", "Ada is allergic to peanuts.")


# -- LangGraph's index configuration ---------------------------------------------------------


def test_langgraphs_index_config_is_taken_as_written(settings: MemhubSettings) -> None:
    # As LangGraph's docs write it for InMemoryStore, with memhub's model for "embed".
    index = {"dims": 384, "embed": "sentence-transformers/all-MiniLM-L6-v2", "fields": ["text"]}
    with MemhubStore(index=index, settings=settings) as store:
        store.put(("mem",), "1", {"text": "Ada is allergic to peanuts.", "other": "zebra"})
        store.put(("mem",), "2", {"text": "Ada lives in Lisbon.", "other": "zebra"})
        hits = store.search(("mem",), query="Which foods must Ada avoid?", limit=1)
        assert [h.key for h in hits] == ["1"]
    with Memory(settings=settings) as memory:  # only "text" was indexed: "other" is not there
        texts = {m["memory"] for m in memory.get_all(agent_id="langgraph")["results"]}
    assert texts == {"Ada is allergic to peanuts.", "Ada lives in Lisbon."}


def test_a_callers_embedding_function_is_the_embedder(settings: MemhubSettings) -> None:
    calls: list[list[str]] = []

    def letters(texts: list[str]) -> list[list[float]]:  # the caller's own "model"
        calls.append(list(texts))
        return [
            [float(t.lower().count(c)) + 0.01 for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts
        ]

    with MemhubStore(index={"dims": 26, "embed": letters}, settings=settings) as store:
        store.put(("n",), "k", {"text": "quiz"})
        assert store.search(("n",), query="quiz", limit=1)[0].key == "k"
    assert ['{"text": "quiz"}'] in calls and ["quiz"] in calls  # the item, then the query


def test_what_memhub_cannot_honour_is_refused_clearly(settings: MemhubSettings) -> None:
    from memhub import ConfigurationError

    with pytest.raises(ConfigurationError, match="MEMHUB_EMBEDDER_MODEL"):
        MemhubStore(
            index={"dims": 1536, "embed": "openai:text-embedding-3-small"}, settings=settings
        )
    with pytest.raises(ConfigurationError, match="cosine"):
        MemhubStore(index={"dims": 384, "distance_type": "l2"}, settings=settings)
    with pytest.raises(ConfigurationError, match="unknown keys"):
        MemhubStore(index={"dims": 384, "metric": "x"}, settings=settings)
    with Memory(settings=settings) as memory:
        with pytest.raises(ConfigurationError, match="settings="):
            MemhubStore(
                memory, index={"dims": 8, "embed": lambda texts: [[1.0] * 8 for _ in texts]}
            )
        with pytest.raises(ConfigurationError, match="unknown keys"):
            MemhubStore(memory, ttl={"default_ttl": 5, "ttl_minutes": 5})
        store = MemhubStore(memory, index={"dims": 1536})
        with pytest.raises(ConfigurationError, match="set dims to 384"):
            store.put(("a",), "k", {"v": 1})


def test_delete_retires_restorably_and_the_user_can_still_erase(settings: MemhubSettings) -> None:
    """A graph's delete is a model's: the item's memory is retired (listed, undone in one
    step under the same id); the person's own delete erases."""
    with Memory(settings=settings) as memory:
        store = MemhubStore(memory, user_id="lg-user")
        ns = ("prefs",)
        store.put(ns, "food", {"likes": "sushi"})
        store.delete(ns, "food")
        assert store.get(ns, "food") is None
        (change,) = memory.model_changes(user_id="lg-user")["results"]
        assert (change["event"], change["actor"]) == ("RETIRE", "langgraph")
        assert change["reason"] == "LangGraph store delete of prefs/food"
        restored = memory.undo_change(change["id"], user_id="lg-user")
        assert restored["id"] == change["memory_id"]
        item = store.get(ns, "food")
        assert item is not None and item.value == {"likes": "sushi"}
        memory.delete(change["memory_id"], user_id="lg-user")  # the user's erase
        assert store.get(ns, "food") is None
        assert memory.retired(user_id="lg-user")["results"] == []
