"""``JobPayload``: the typed form of a queued job's JSON, read once when the store hands it out.

Pure records, no database: the round trip of every payload shape memhub writes, the reasons a
malformed one is refused with, and the keys the SQL spells through constants.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from uuid import UUID

import pytest

from memhub.store.records import JOB_DONE, JOB_TURN_IDS, Job, JobPayload, Scope

MEMORY = "8f0c5c1e-8a43-4d3c-9c59-1b2f0a7f6a10"

# What add(), ARKOS's add_turn, the importer, append_turns, a large job's progress and the
# worker's consolidation follow-up write.
WRITTEN = [
    {"infer": True, "event_id": "e1", "memory_ids": [MEMORY]},
    {"infer": False, "event_id": "e1", "instructions": "Be brief.", "memory_type": "episodic",
     "expires_at": "2031-01-02T03:04:05+00:00", "memory_ids": [MEMORY], "turn_ids": [7]},
    {"infer": False, "turn_ids": []},
    {"turn_ids": [1, 2, 3], "done": 2},
    {"event_id": "e2", "instructions": "x", "turn_ids": [4]},
    {},
]  # fmt: skip


@pytest.mark.parametrize("written", WRITTEN)
def test_every_payload_memhub_writes_reads_back_as_it_was(written: dict[str, object]) -> None:
    assert JobPayload.from_json(written).to_json() == written


def test_the_fields_are_typed() -> None:
    payload = JobPayload.from_json(WRITTEN[1])
    assert payload.memory_ids == (UUID(MEMORY),)
    assert payload.expires_at == datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert payload.turns == (7,) and payload.progress == 0
    assert JobPayload().turns == () and JobPayload(done=3).progress == 3


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"turn_ids": "not a list"}, "payload turn_ids must be a list of integers"),
        ({"turn_ids": [1, "2"]}, "payload turn_ids must be a list of integers"),
        ({"turn_ids": [True]}, "payload turn_ids must be a list of integers"),
        ({"memory_ids": ["nope"]}, "payload memory_ids must be a list of UUIDs"),
        ({"infer": "yes"}, "payload infer must be true or false"),
        ({"done": "3"}, "payload done must be an integer"),
        ({"event_id": 5}, "payload event_id must be a string"),
        ({"expires_at": "soon"}, "payload expires_at must be an ISO 8601 timestamp"),
        (["turn_ids"], "payload must be a JSON object"),
    ],
)
def test_a_malformed_payload_is_refused_naming_its_key(raw: object, reason: str) -> None:
    with pytest.raises(TypeError, match=f"^{reason}$"):
        JobPayload.from_json(raw)


def test_keys_this_version_does_not_know_are_carried_and_null_reads_as_absent() -> None:
    payload = JobPayload.from_json({"turn_ids": [1], "priority": {"n": 1}, "memory_type": None})
    assert payload.memory_type is None
    assert payload.to_json() == {"turn_ids": [1], "priority": {"n": 1}}
    follow_up = dataclasses.replace(payload, infer=None, done=None, memory_ids=None)
    assert follow_up.to_json() == {"turn_ids": [1], "priority": {"n": 1}}


def test_the_keys_the_sql_spells_are_payload_fields() -> None:
    names = {f.name for f in dataclasses.fields(JobPayload)}
    assert {JOB_TURN_IDS, JOB_DONE} <= names
    assert JobPayload(turn_ids=(1,), done=1).to_json() == {JOB_TURN_IDS: [1], JOB_DONE: 1}


def test_a_stored_job_is_read_once_and_a_malformed_one_says_why() -> None:
    at = datetime.now(UTC)
    good = Job.stored(1, "ingest", Scope(user_id="u"), {"turn_ids": [3]}, 1, at)
    assert good.payload == JobPayload(turn_ids=(3,)) and good.payload_error is None
    bad = Job.stored(2, "ingest", Scope(user_id="u"), {"turn_ids": "x"}, 1, at)
    assert bad.payload == JobPayload()
    assert bad.payload_error == "job 2: payload turn_ids must be a list of integers"
