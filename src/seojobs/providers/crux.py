"""Chrome UX Report (CrUX) API: field data (p75 and histograms) for one URL and form factor.

Wire format (reference/seo_jobs.md §5.3, developer.chrome.com/docs/crux/api):
``POST {base}/v1/records:queryRecord?key=KEY`` with JSON ``{"url", "formFactor": "PHONE" |
"DESKTOP", "metrics": [...]}``; the answer is ``{"record": {"key", "metrics": {name:
{"histogram": [{"start", "end"?, "density"}], "percentiles": {"p75"}}}, "collectionPeriod":
{"firstDate", "lastDate"}}}``. CLS's p75 comes as a string ("0.05"); 404 ``NOT_FOUND`` means
CrUX holds no data for that URL (not an error: the result is ``None``).
"""

from __future__ import annotations

from typing import Any

from seojobs.fetch.errors import UnreadableBody
from seojobs.providers.base import (
    KeyedClient,
    ProviderError,
    error_for_status,
    malformed,
    with_retries,
)

NAME = "crux"
FORM_FACTORS = {"mobile": "PHONE", "desktop": "DESKTOP"}
# CrUX metric name -> our short name.
METRICS = {
    "largest_contentful_paint": "lcp",
    "cumulative_layout_shift": "cls",
    "interaction_to_next_paint": "inp",
    "first_contentful_paint": "fcp",
    "experimental_time_to_first_byte": "ttfb",
}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)  # CLS comes as a string
    except (TypeError, ValueError):
        return None


def _date(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    try:
        return f"{int(value['year']):04d}-{int(value['month']):02d}-{int(value['day']):02d}"
    except (KeyError, TypeError, ValueError):
        return None


def parse_record(answer: Any) -> dict[str, Any]:
    """Our shape of a ``queryRecord`` answer: ``metrics`` {lcp, cls, ...: {p75, histogram}}
    and ``collection_period`` {first_date, last_date}."""
    record = answer.get("record") if isinstance(answer, dict) else None
    if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
        raise malformed(NAME, "no record.metrics")
    metrics: dict[str, Any] = {}
    for name, short in METRICS.items():
        found = record["metrics"].get(name)
        if not isinstance(found, dict):
            continue
        histogram = [
            {
                "start": _number(b.get("start")),
                "end": _number(b.get("end")),
                "density": b.get("density"),
            }
            for b in found.get("histogram") or []
            if isinstance(b, dict)
        ]
        percentiles = found.get("percentiles") or {}
        metrics[short] = {"p75": _number(percentiles.get("p75")), "histogram": histogram}
    period = record.get("collectionPeriod") or {}
    return {
        "source": NAME,
        "metrics": metrics,
        "collection_period": {
            "first_date": _date(period.get("firstDate")),
            "last_date": _date(period.get("lastDate")),
        },
    }


class CruxClient(KeyedClient):
    name = NAME
    key_setting = "crux_api_key"
    base_setting = "crux_base_url"
    path = "/v1/records:queryRecord"

    async def record(self, url: str, form_factor: str) -> dict[str, Any] | None:
        """Field data for ``url`` on ``form_factor`` (mobile/desktop); None when CrUX has none."""
        try:
            return await with_retries(
                lambda: self._attempt(url, form_factor),
                retries=self._settings.provider_retries,
                backoff=self._settings.provider_backoff,
                settings=self._settings,
                provider=self.name,
                sleep=self._sleep,
            )
        except UnreadableBody as exc:
            raise malformed(NAME, f"unreadable body ({exc.message})") from None

    async def _attempt(self, url: str, form_factor: str) -> dict[str, Any] | None:
        body = {
            "url": url,
            "formFactor": FORM_FACTORS[form_factor],
            "metrics": list(METRICS),
        }
        response = await self._client.post(self._endpoint, params={"key": self._key}, json=body)
        if response.status == 404:
            return None  # NOT_FOUND: CrUX has no field data for this URL
        error = error_for_status(response, NAME)
        if error is not None:
            raise error
        try:
            answer = response.json()
        except ValueError:
            raise malformed(NAME, "not JSON") from None
        return parse_record(answer)


__all__ = ["CruxClient", "ProviderError", "parse_record"]
