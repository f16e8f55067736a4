"""Found links monitored (issue 29.3, ``services.monitored``): links a ``backlink_analysis``
found join the (donor, target) pairs the project's ``backlink_refresh`` collection checks, in
bulk. The analysis is the project's last completed one of the target named (or the newest of
any); the links are those named, or those the filters pick (``kinds.backlink_analysis
.monitor``). Each pair is added once (one already monitored is skipped), up to the refresh's
1,000 pairs; a project without a backlink refresh collection gets one (daily), which
``PUT /v1/projects/{id}/collection`` changes like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seojobs.kinds.backlink_analysis import monitor
from seojobs.kinds.backlink_analysis.reads import READS
from seojobs.kinds.backlink_refresh.params import MAX_LINKS
from seojobs.records import CollectionRecord, UserRecord
from seojobs.services import reads
from seojobs.services.base import Part, ServiceBase
from seojobs.services.collection_config import Collected, CollectionConfig
from seojobs.services.errors import Conflict, FieldError, Invalid

REFRESH = "backlink_refresh"
ANALYSIS = READS[0]  # the links read: its target filter finds the analysis


@dataclass(frozen=True)
class Monitored:
    """What an add did: the analysis read, the pairs added, how many of those picked were
    monitored already, and the refresh collection as it is now."""

    analysis: CollectionRecord
    added: list[dict[str, str]]
    already_monitored: int
    collection: Collected

    @property
    def monitored(self) -> int:
        schedule = self.collection.schedule
        links = schedule.params.get("links") if schedule is not None else None
        return len(links) if isinstance(links, list) else 0


class Monitor(Part):
    def __init__(self, base: ServiceBase, collection: CollectionConfig) -> None:
        super().__init__(base)
        self.collection = collection

    def add_found(
        self, user: UserRecord, project_id: int, request: monitor.MonitorLinks
    ) -> Monitored:
        """Monitor the links of the analysis ``request`` names (404 before one completed;
        ``Invalid`` naming ``links[N]`` for a link it did not find; 409 ``tracked_limit`` past
        1,000 pairs)."""
        values = {"target": request.target} if request.target is not None else {}
        analysis = reads.one(self.base, user, project_id, ANALYSIS, values)
        data = analysis.data if isinstance(analysis.data, dict) else {}
        links = data.get("links")
        picked = monitor.pick(request, links if isinstance(links, list) else [])
        if picked.unknown:
            where = f"the analysis of {data.get('target')!r} (job {analysis.job_id})"
            raise Invalid(
                [FieldError(("links", i), f"not a link {where} found") for i in picked.unknown]
            )
        if not picked.pairs:  # nothing picked: nothing changes (no collection is made)
            current = next(
                c for c in self.collection.get(user, project_id) if c.kind.name == REFRESH
            )
            return Monitored(analysis, [], 0, current)
        added: list[dict[str, str]] = []

        def extend(params: dict[str, Any]) -> dict[str, Any]:
            have = params.get("links")
            pairs, new = monitor.merged(have if isinstance(have, list) else [], picked.pairs)
            if len(pairs) > MAX_LINKS:  # rolled back with the transaction
                raise Conflict(
                    f"a backlink refresh monitors at most {MAX_LINKS:,} pairs; this would "
                    f"make it {len(pairs):,}: pick fewer (limit, filters) or remove some from "
                    "the collection's params first",
                    "tracked_limit",
                )
            added[:] = new
            return params | {"links": pairs}

        collected = self.collection.change_params(user, project_id, REFRESH, extend)
        return Monitored(analysis, added, len(picked.pairs) - len(added), collected)
