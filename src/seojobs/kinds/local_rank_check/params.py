"""A local rank check's params: the keywords, where (a place name, or a point and a map zoom),
whose listing (a place id, a website domain, names), on Maps or in the local pack, by which
provider, and optionally a grid of points around the centre."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from seojobs.fielderrors import field_error
from seojobs.kinds.domain_lookup.params import Domain
from seojobs.kinds.geo_lookup.params import Brand
from seojobs.kinds.keyword_research.params import LANGUAGE_PATTERN, LocationName, Seed
from seojobs.records import ProjectDefaults
from seojobs.schemarules import NULL, given

MAX_KEYWORDS = 20
MAX_NAMES = 10
MAX_SEARCHES = 500  # keywords x grid points: one job's searches at most
MAX_RADIUS_KM = 50.0
PLACE_ID_PATTERN = r"^[A-Za-z0-9_\-:]{1,200}$"
Surface = Literal["maps", "local_pack"]
Provider = Literal["serpapi", "dataforseo", "serper"]


class Grid(BaseModel):
    """``size`` x ``size`` points spread evenly over a square around the centre, its corners
    ``radius_km`` away from the centre along each axis (the centre is the middle point)."""

    model_config = ConfigDict(extra="forbid")

    size: Literal[3, 5, 7] = Field(
        description="Points per side: 3, 5 or 7 (9, 25 or 49 searches per keyword)."
    )
    radius_km: float = Field(
        gt=0,
        le=MAX_RADIUS_KM,
        description="From the centre to the outer rows and columns, in km (up to "
        f"{MAX_RADIUS_KM:g}).",
    )


class LocalRankCheckParams(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        # Where: a place name (no grid: a grid needs a centre point) or a point; whose
        # listing: at least one of place_id, domain and names (a project's domain and brand
        # names fill them in when the request gives none). The schema says what the
        # validators say, so a client built from the document is not refused.
        json_schema_extra={
            "oneOf": [
                {**given("location", latitude=NULL, longitude=NULL), "not": given("grid")},
                given("latitude", "longitude", location=NULL, surface={"const": "maps"}),
            ],
            "anyOf": [given("place_id"), given("domain"), given("names", lists=["names"])],
        },
    )

    keywords: list[Seed] = Field(
        min_length=1,
        max_length=MAX_KEYWORDS,
        description=f"The keywords searched (1 to {MAX_KEYWORDS}); duplicates, whatever their "
        "case, count once. Each search (a keyword at a point) is an item and a quota unit.",
    )
    location: LocationName | None = Field(
        default=None,
        description="Where the searcher is: a place name (`Austin,Texas,United States`). "
        "Exactly one of `location` and `latitude` with `longitude`.",
    )
    latitude: float | None = Field(
        default=None, ge=-90, le=90, description="The centre's latitude."
    )
    longitude: float | None = Field(
        default=None, ge=-180, le=180, description="The centre's longitude."
    )
    zoom: int = Field(
        default=14,
        ge=3,
        le=21,
        description="The map's zoom as Google Maps counts it: 3 (the world) to 21 (a street).",
    )
    language: str = Field(
        default="en", pattern=LANGUAGE_PATTERN, description="The searchers' language (`en`)."
    )
    surface: Surface = Field(
        default="maps",
        description="`maps`: Google Maps' list; `local_pack`: the local pack of a Google web "
        "search (SerpApi only, at a place name).",
    )
    place_id: str | None = Field(
        default=None,
        pattern=PLACE_ID_PATTERN,
        description="The business's Google place id (`ChIJ...`) or CID (digits): the surest match.",
    )
    domain: Domain | None = Field(
        default=None,
        description="The business's website domain: a listing whose website is on the same "
        "registrable domain matches (default: the project's domain).",
    )
    names: list[Brand] = Field(
        default_factory=list,
        max_length=MAX_NAMES,
        description="The business's names: a listing whose name, normalised (case, accents, "
        "punctuation), is one of them or begins with one matches (default: the project's "
        "brand names).",
    )
    grid: Grid | None = Field(
        default=None,
        description="A grid of points around the centre (`latitude`, `longitude`): each "
        "keyword is searched at each point, giving the average position and the share of "
        "points in the top 3.",
    )
    provider: Provider | None = Field(
        default=None,
        description="Who answers; default: the configured ones in "
        "SEOJOBS_LOCAL_RANK_CHECK_PROVIDERS (serpapi, dataforseo, serper), the next taking "
        "over from one that fails.",
    )

    @field_validator("language")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()

    @model_validator(mode="after")
    def _coherent(self) -> LocalRankCheckParams:
        unique = {k.casefold(): k for k in reversed(self.keywords)}  # first spelling kept
        self.keywords = [unique[k] for k in dict.fromkeys(k.casefold() for k in self.keywords)]
        names = {n.casefold(): n for n in reversed(self.names)}  # first spelling kept
        self.names = [names[n] for n in dict.fromkeys(n.casefold() for n in self.names)]
        point = (self.latitude, self.longitude)
        if self.location is None and None in point:
            missing = "latitude" if self.latitude is None else "longitude"
            raise field_error(LocalRankCheckParams, missing, "give a location or a point")
        if self.location is not None and point != (None, None):
            raise field_error(
                LocalRankCheckParams, "location", "give a location or a point, not both"
            )
        self._check_where()
        if self.place_id is None and self.domain is None and not self.names:
            raise field_error(
                LocalRankCheckParams, "place_id", "give a place_id, a domain or names"
            )
        return self

    def _check_where(self) -> None:
        if self.grid is not None and self.location is not None:
            raise field_error(LocalRankCheckParams, "grid", "a grid needs latitude and longitude")
        if self.surface == "local_pack" and self.location is None:
            raise field_error(LocalRankCheckParams, "surface", "the local pack needs a location")
        if len(self.keywords) * self.points > MAX_SEARCHES:
            raise field_error(
                LocalRankCheckParams,
                "grid" if self.grid else "keywords",
                f"keywords x grid points is at most {MAX_SEARCHES}",
            )

    @property
    def points(self) -> int:
        return self.grid.size**2 if self.grid else 1


def from_project(params: Mapping[str, Any], defaults: ProjectDefaults) -> dict[str, Any]:
    """The project's ``domain`` and brand names (``names``) where the request gives no way to
    know the business (no ``place_id``, ``domain`` or ``names``) and names a project."""
    found = dict(params)
    project = defaults.record
    if project is None or any(key in found for key in ("place_id", "domain", "names")):
        return found
    if project.domain:
        found["domain"] = project.domain
    if project.brand_names:
        found["names"] = list(project.brand_names)
    return found
