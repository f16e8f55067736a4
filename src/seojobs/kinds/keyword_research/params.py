"""A keyword research's params: seed keywords or a page, where, in which language, how many."""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from seojobs.fielderrors import field_error
from seojobs.kinds.urls import Url
from seojobs.schemarules import given

MAX_SEEDS = 20  # the Keyword Planner's most; DataForSEO takes more
MAX_KEYWORD = 80  # both providers' longest keyword
ASCII_SPACE = " \t\n\r\f\v"
# No control characters, and something besides spaces (trimmed).
TEXT_PATTERN = r"^[^\x00-\x1f\x7f]*[^\x00-\x20\x7f][^\x00-\x1f\x7f]*$"
LANGUAGE_PATTERN = r"^[A-Za-z]{2,3}(-[A-Za-z]{2,4})?$"


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def checked_text(value: str, most: int) -> str:
    """A trimmed line of text: what the schema's pattern says, in words when refused."""
    if len(value) > most:
        raise PydanticCustomError("text", f"at most {most} characters")
    if _CONTROL.search(value):
        raise PydanticCustomError("text", "no control characters (tabs, line breaks)")
    trimmed = value.strip(ASCII_SPACE)
    if not trimmed:
        raise PydanticCustomError("text", "more than spaces")
    return trimmed


def _text(most: int) -> tuple[AfterValidator, WithJsonSchema]:
    schema = {"type": "string", "minLength": 1, "maxLength": most, "pattern": TEXT_PATTERN}
    return AfterValidator(functools.partial(checked_text, most=most)), WithJsonSchema(schema)


MAX_LOCATION = 2**31 - 1
MAX_LOCATION_NAME = 100
Seed = Annotated[str, *_text(MAX_KEYWORD)]
LocationName = Annotated[str, *_text(MAX_LOCATION_NAME)]


def checked_location(value: Any) -> Any:
    """A location code or name, checked whole: a union would report each of its branches'
    refusals. "2840" is the code 2840, not a place called that."""
    if isinstance(value, str) and value.isascii() and value.strip(ASCII_SPACE).isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 2840.0 is the integer JSON Schema says it is
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_LOCATION:
            raise PydanticCustomError("location", "a location code is 1 or more")
        return value
    if isinstance(value, str):
        return checked_text(value, MAX_LOCATION_NAME)
    raise PydanticCustomError("location", "a location code (a number) or a name")


class KeywordResearchParams(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        # Exactly one of the two inputs.
        json_schema_extra={"oneOf": [given("seeds"), given("url")]},
    )

    seeds: list[Seed] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_SEEDS,
        description="Seed keywords (1 to 20): their own figures and ideas around them. "
        "Give seeds or url, not both.",
    )
    url: Url | None = Field(
        default=None, description="A page: the keywords it is relevant for (instead of seeds)."
    )
    location: Annotated[int, Field(ge=1, le=MAX_LOCATION)] | LocationName = Field(
        default=2840,
        description="Where the searches are counted: a location code, the Google Ads geo "
        "target id both providers use (2840 United States, 2826 United Kingdom, 2276 "
        "Germany), or, with DataForSEO, a location name (`London,England,United Kingdom`).",
    )
    language: str = Field(
        default="en",
        pattern=LANGUAGE_PATTERN,
        description="The searchers' language, an ISO 639 code (`en`, `de`, `zh-TW`).",
    )
    provider: Literal["dataforseo", "google_ads"] | None = Field(
        default=None,
        description="Who answers; default: the first configured one in "
        "SEOJOBS_KEYWORD_PROVIDERS (dataforseo, then google_ads).",
    )
    limit: int = Field(
        default=100, ge=1, le=1000, description="Keywords kept at most (seeds first)."
    )

    @field_validator("location", mode="before")
    @classmethod
    def _location(cls, value: Any) -> Any:
        return checked_location(value)

    @field_validator("language")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()

    @model_validator(mode="after")
    def _one_input(self) -> KeywordResearchParams:
        if self.seeds is None and self.url is None:
            raise field_error(
                KeywordResearchParams, "seeds", "give seeds (1 to 20 keywords) or a url"
            )
        if self.seeds is not None and self.url is not None:
            raise field_error(KeywordResearchParams, "url", "give seeds or a url, not both")
        if self.seeds is not None:
            unique = {s.casefold(): s for s in reversed(self.seeds)}  # first spelling kept
            self.seeds = [unique[k] for k in dict.fromkeys(s.casefold() for s in self.seeds)]
        return self
