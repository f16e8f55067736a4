"""Google's rich-result requirements for JSON-LD items: the properties each type must have
to be eligible (required) and those Google recommends, from Google Search Central's
structured data pages (Article, Product snippet, Review snippet, Breadcrumb, FAQ,
Organization, Local business, Event, Recipe, Job posting, Video), written here as property
names, nothing fetched at run time.

An alternative is written ``a|b`` (either will do); a nested requirement is the nested
type's own entry (an Offer inside a Product is checked as an Offer). Items are found at any
depth of a block (``@graph``, nested values), within bounds: a hostile page cannot make the
walk costly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

Lack = dict[str, str]
# type -> (required, recommended)
RICH_TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Article": ((), ("headline", "image", "datePublished", "dateModified", "author")),
    "NewsArticle": ((), ("headline", "image", "datePublished", "dateModified", "author")),
    "BlogPosting": ((), ("headline", "image", "datePublished", "dateModified", "author")),
    "Product": (("name", "offers|review|aggregateRating"), ("image", "description", "brand")),
    "Offer": (("price|priceSpecification",), ("priceCurrency", "availability")),
    "Review": (("author", "reviewRating"), ("datePublished",)),
    "AggregateRating": (("ratingValue", "ratingCount|reviewCount"), ("bestRating", "worstRating")),
    "BreadcrumbList": (("itemListElement",), ()),
    # Google: name and position required, item too except on the trail's last crumb (the
    # page itself), which a walk over one item cannot tell: item is reported as recommended.
    "ListItem": (("position", "name"), ("item",)),
    "FAQPage": (("mainEntity",), ()),
    "Question": (("name", "acceptedAnswer"), ()),
    "Answer": (("text",), ()),
    "Organization": ((), ("name", "url", "logo")),
    "LocalBusiness": (("name", "address"), ("telephone", "url", "openingHoursSpecification")),
    "Event": (
        ("name", "startDate", "location"),
        ("endDate", "description", "image", "offers", "eventStatus", "organizer", "performer"),
    ),
    "Recipe": (("name", "image"), ("author", "recipeIngredient", "recipeInstructions")),
    "JobPosting": (
        ("title", "description", "datePosted", "hiringOrganization", "jobLocation|jobLocationType"),
        ("validThrough", "employmentType", "baseSalary"),
    ),
    "VideoObject": (
        ("name", "thumbnailUrl", "uploadDate"),
        ("description", "contentUrl|embedUrl", "duration"),
    ),
}
MAX_NODES = 500  # items looked at per page at most
MAX_DEPTH = 16


def types_of(node: dict[str, Any]) -> list[str]:
    kind = node.get("@type")
    names = kind if isinstance(kind, list) else [kind]
    return [n.rsplit("/", 1)[-1] for n in names if isinstance(n, str)]


def item_nodes(values: list[Any], label: str = "block") -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, node) for each object node of the blocks, breadth first, within bounds."""
    queue: list[tuple[str, Any, int]] = [(f"{label} {i + 1}", v, 0) for i, v in enumerate(values)]
    seen = 0
    while queue and seen < MAX_NODES:
        path, value, depth = queue.pop(0)
        if depth > MAX_DEPTH:
            continue
        if isinstance(value, list):
            queue += [(f"{path}[{i}]", v, depth + 1) for i, v in enumerate(value[:MAX_NODES])]
            continue
        if not isinstance(value, dict):
            continue
        seen += 1
        yield path, value
        for key, inner in value.items():
            if isinstance(inner, dict | list) and key != "@context":
                queue.append((f"{path}.{key}", inner, depth + 1))


def _has(node: dict[str, Any], names: str) -> bool:
    return any(node.get(name) not in (None, "", [], {}) for name in names.split("|"))


def missing(values: list[Any], label: str = "block") -> tuple[list[Lack], list[Lack]]:
    """(required, recommended) properties the rich-result items of parsed JSON-LD ``values``
    (or microdata and RDFa items in its shape) lack, one entry per item and property:
    ``{"type", "item", "property"}``, the item named by its path in the page's blocks (and
    its name, when it has one)."""
    required: list[Lack] = []
    recommended: list[Lack] = []
    for path, node in item_nodes(values, label):
        name = node.get("name") if isinstance(node.get("name"), str) else None
        item = f"{path} ({name[:80]})" if name else path
        for kind in types_of(node):
            if kind not in RICH_TYPES:
                continue
            needed, advised = RICH_TYPES[kind]
            required += [
                {"type": kind, "item": item, "property": p} for p in needed if not _has(node, p)
            ]
            recommended += [
                {"type": kind, "item": item, "property": p} for p in advised if not _has(node, p)
            ]
    return required, recommended
