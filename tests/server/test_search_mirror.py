"""The REST search request and ``memhub search`` mirror the facade's search arguments, so a
knob added to ``AsyncMemory.search`` cannot be left out of a door without this failing."""

from __future__ import annotations

import dataclasses
import inspect

from memhub import AsyncMemory, FusionConfig, SearchConfig
from memhub.cli.parser import build_parser
from memhub.engine.search_config import CALL_KNOBS
from memhub.server.models import SearchRequest

#: REST-only fields, each with its reason.
REST_ONLY = {
    "causal_tokens",  # read your own writes per caller: the Python object knows its own adds
    "output_format",  # Mem0's REST compatibility fields, accepted and ignored (docs/api.md)
    "version",
}
#: Facade-only arguments: REST accepts ``top_k`` as an alias of ``limit``.
FACADE_ONLY = {"top_k"}
#: Facade arguments ``memhub search`` does not take, each with its reason.
NOT_IN_CLI = {
    "agent_id",  # the CLI searches a user's memories (docs/cli.md)
    "run_id",
    "filters",  # Mem0's filter language: Python and REST only
    "include_superseded",
    "threshold",  # Mem0's absolute cut-off; the CLI takes the relative one
    "top_k",  # ``--limit``
}


def _facade_arguments() -> set[str]:
    return set(inspect.signature(AsyncMemory.search).parameters) - {"self"}


def _cli_search_options() -> set[str]:
    parser = build_parser()
    search = next(
        action.choices["search"]
        for action in parser._actions
        if getattr(action, "choices", None) and "search" in action.choices
    )
    return {a.dest for a in search._actions}


def test_every_knob_of_the_search_config_a_call_may_set_is_in_every_door() -> None:
    """One object says how a search ranks and how much it returns; the knobs a call may
    override are its own fields (or its fusion's), and Python, REST and the CLI take each."""
    fields = {f.name for f in dataclasses.fields(SearchConfig)}
    fusion_fields = {f.name for f in dataclasses.fields(FusionConfig)}
    for knob in CALL_KNOBS:
        assert knob in fields | fusion_fields, knob
        assert knob in _facade_arguments(), knob
        assert knob in SearchRequest.model_fields, knob
        assert knob in _cli_search_options(), knob


def test_the_rest_search_request_mirrors_the_facade() -> None:
    rest = set(SearchRequest.model_fields)
    assert rest - REST_ONLY == _facade_arguments() - FACADE_ONLY
    assert "top_k" in str(SearchRequest.model_fields["limit"].validation_alias)


def test_the_cli_search_takes_the_result_budget() -> None:
    """The knobs that shape what a search returns (docs/cli.md); scope, filters and time
    travel are the facade's and the REST body's."""
    options = _cli_search_options()
    assert {"limit", "max_tokens", "min_score_ratio", "rerank", "as_of"} <= options
    assert options & _facade_arguments() >= {"max_tokens", "min_score_ratio", "rerank"}
    # Every other facade argument is a CLI option too: a new knob must be added or listed.
    assert _facade_arguments() - NOT_IN_CLI == options & _facade_arguments()
