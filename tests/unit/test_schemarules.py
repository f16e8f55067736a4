"""A kind's params document says what its validator says across fields: a request the model
accepts is valid by its JSON Schema and one it refuses is not (``seojobs.schemarules``: a
field given is present and not null, a list not empty). Before, ``required`` alone let
``"location": null`` with a point's longitude through the document and refused
``{"seeds": [...], "url": null}`` that the API accepts."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
from pydantic import BaseModel, ValidationError

from seojobs.kinds.backlink_analysis.params import BacklinkAnalysisParams
from seojobs.kinds.geo_lookup.params import GeoLookupParams
from seojobs.kinds.keyword_research.params import KeywordResearchParams
from seojobs.kinds.local_rank_check.params import LocalRankCheckParams
from seojobs.kinds.rank_check.params import RankCheckParams

LOCAL = {"keywords": ["plumber"]}
TARGET = {"target": "example.com"}
CASES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (RankCheckParams, {**TARGET, "keywords": ["a"]}),
    (RankCheckParams, {**TARGET, "keywords": []}),
    (RankCheckParams, {**TARGET, "keywords": [], "tracked": [{"keyword": "a"}]}),
    (RankCheckParams, {**TARGET, "keywords": ["a"], "tracked": []}),
    (LocalRankCheckParams, {**LOCAL, "location": "Austin", "names": ["Acme"]}),
    (LocalRankCheckParams, {**LOCAL, "location": None, "longitude": 2.3, "names": ["Acme"]}),
    (LocalRankCheckParams, {**LOCAL, "location": None, "latitude": 1.0, "longitude": 2.3}),
    (LocalRankCheckParams, {**LOCAL, "latitude": 1.0, "longitude": 2.3, "domain": "a.com"}),
    (LocalRankCheckParams, {**LOCAL, "location": "Austin", "latitude": 1.0, "names": ["A"]}),
    (LocalRankCheckParams, {**LOCAL, "location": "Austin", "latitude": None, "names": ["A"]}),
    (LocalRankCheckParams, {**LOCAL, "location": "Austin", "place_id": None, "names": []}),
    (LocalRankCheckParams, {**LOCAL, "location": "Austin", "grid": None, "domain": "a.com"}),
    (BacklinkAnalysisParams, {"domain": "a.com", "url": None}),
    (BacklinkAnalysisParams, {"domain": None, "url": "https://a.com/page"}),
    (BacklinkAnalysisParams, {"domain": None, "url": None}),
    (BacklinkAnalysisParams, {"domain": "a.com", "url": "https://a.com/page"}),
    (KeywordResearchParams, {"seeds": ["a"], "url": None}),
    (KeywordResearchParams, {"seeds": None, "url": "https://a.com/"}),
    (KeywordResearchParams, {"seeds": None, "url": None}),
    (GeoLookupParams, {"prompts": ["best plumber"], "brand": None, "domain": "a.com"}),
    (GeoLookupParams, {"prompts": ["best plumber"], "brand": None, "domain": None}),
]


def _accepted(model: type[BaseModel], params: dict[str, Any]) -> bool:
    try:
        model.model_validate(params)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(("model", "params"), CASES)
def test_the_document_accepts_what_the_model_accepts_and_no_more(
    model: type[BaseModel], params: dict[str, Any]
) -> None:
    by_schema = jsonschema_rs.validator_for(model.model_json_schema()).is_valid(params)
    assert by_schema == _accepted(model, params), (model.__name__, params)
