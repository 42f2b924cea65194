"""The planted-documents extension: what a message may plant, and what is refused."""

from __future__ import annotations

import pytest

from arena_core.errors import InvalidInputError
from arena_core.planted_documents import (
    MAX_DOCUMENTS,
    MAX_TEXT_CHARS,
    PLANTED_DOCUMENTS_EXTENSION,
    plant_documents_metadata,
    read_planted_documents,
)


def test_planted_documents_round_trip_in_order() -> None:
    documents = {"B note": "second", "A note": "first"}
    assert read_planted_documents(plant_documents_metadata(documents)) == documents
    assert list(read_planted_documents(plant_documents_metadata(documents)) or {}) == ["B note", "A note"]


@pytest.mark.parametrize("metadata", [None, {}, {"other": 1}])
def test_no_entry_plants_nothing(metadata: dict[str, object] | None) -> None:
    assert read_planted_documents(metadata) is None


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("text", "non-empty 'documents' list"),
        ({"documents": []}, "non-empty 'documents' list"),
        ({"documents": [{"title": "t"}] * (MAX_DOCUMENTS + 1)}, f"at most {MAX_DOCUMENTS}"),
        ({"documents": ["t"]}, "must be an object"),
        ({"documents": [{"title": "t", "text": "x", "extra": 1}]}, "must be an object"),
        ({"documents": [{"title": " ", "text": "x"}]}, "'title' must be a non-empty string"),
        ({"documents": [{"title": "t", "text": "x" * (MAX_TEXT_CHARS + 1)}]}, "'text' must be"),
        ({"documents": [{"title": "t", "text": 3}]}, "'text' must be"),
        ({"documents": [{"title": "t", "text": "x"}, {"title": "t", "text": "y"}]}, "repeats the title"),
    ],
)
def test_malformed_plantings_are_invalid_input(entry: object, problem: str) -> None:
    with pytest.raises(InvalidInputError, match=problem):
        read_planted_documents({PLANTED_DOCUMENTS_EXTENSION: entry})
