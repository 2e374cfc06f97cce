"""API reference pages in Markdown, generated from each job kind's pydantic models.

`python -m controllers.generate` rewrites the bundled kinds' pages (with the other generated
files), and `tests/unit/cli/test_generate.py` fails when the committed pages differ from what the
models give.
A page follows the JSON schema the kind's CRD is made from (`model_json_schema(by_alias=True)`,
the input of `jobcore.structural_schema`): wire names, types, bounds, required fields,
descriptions from `Field(description=...)` and model docstrings, plus the defaults the models
apply (which the CRD leaves out). A Kubernetes PodTemplateSpec is summarized by the fields
jobcore reads rather than given sections of its own. A page is named after its kind's entry
point (`mpijob.md`, `kubeflow-mpijob.md`): two kinds may share a kind name.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic.json_schema import GenerateJsonSchema
from pydantic.json_schema import models_json_schema
from pydantic_core import core_schema

from controllers import _apischema
from controllers._apischema import NONE
from jobcore.jobs import T9K_STATUS
from jobcore.jobs import JobKind
from jobcore.jobs import crd_for
from jobcore.jobs import hooks_of

REGENERATE = "python -m controllers.generate"
"""The command that rewrites the committed pages (and every other generated file)."""
INDEX = "README.md"
STATUS_DOC = "../status.md"
"""Where the status reference is, relative to the pages."""

_KUBERNETES_TYPES = {
    "PodTemplateSpec": "https://kubernetes.io/docs/reference/kubernetes-api/"
    "workload-resources/pod-template-v1/#PodTemplateSpec",
}
"""Models of Kubernetes types: summarized as a flat list of the fields jobcore types."""
_MODEL_REQUIRED_NOTE = (
    "\\* Required by the kind, but not by the CRD's schema: the kind also accepts other fields "
    "in its place (see the descriptions)."
)
_FIELD_HEADER = ("field", "type", "default", "description")

Row = list[str]


class _SchemaWithFactoryDefaults(GenerateJsonSchema):
    """pydantic's JSON schema, with the defaults of `default_factory` fields filled in too."""

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        factory = schema.get("default_factory")
        if factory is not None and not schema.get("default_factory_takes_data"):
            return typing.cast(Callable[[], Any], factory)()
        return super().get_default_value(schema)


# Pages -----------------------------------------------------------------------------------


def api_reference(kind: JobKind[Any], *, status_doc: str = STATUS_DOC) -> str:
    """The Markdown reference of one kind: its names, columns, spec, then status."""
    page = _Page(kind)
    crd = crd_for(kind)
    names = crd["spec"]["names"]
    resource = kind.resource
    api_version = f"`{resource.group}/{resource.version}`"
    t9k_status = hooks_of(kind).status_part is T9K_STATUS
    status_link = f"[Job status]({status_doc})"
    written = (
        f"Written by the controller: {status_link}." if t9k_status else "Written by the controller."
    )
    lines = [
        f"# {resource.kind} API reference",
        "",
        f"Generated from the kind's pydantic models by `{REGENERATE}`; do not edit by hand.",
        "Field names are as written in YAML. The CRD's schema comes from the same models.",
        "",
        *_table(
            ("", ""),
            [
                ("API version", api_version),
                ("kind", f"`{resource.kind}`"),
                ("plural, singular", _codes((names["plural"], names["singular"]))),
                ("short names", _codes(names.get("shortNames", ())) or NONE),
                ("categories", _codes(names.get("categories", ())) or NONE),
                ("scope", crd["spec"]["scope"]),
            ],
        ),
        "## `kubectl get` columns",
        "",
        *_table(
            ("column", "type", "JSONPath", "description"),
            [
                (c["name"], c["type"], f"`{c['jsonPath']}`", _cell(c.get("description", "")))
                for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]
            ],
        ),
        "## Resource",
        "",
        *_table(
            _FIELD_HEADER,
            [
                ("`apiVersion`", "string", "required", api_version),
                ("`kind`", "string", "required", f"`{resource.kind}`"),
                ("`metadata`", "ObjectMeta", "required", "Kubernetes object metadata."),
                ("`spec`", _apischema.link(page.spec), "required", "The job."),
                (
                    "`status`",
                    _apischema.link(page.status),
                    NONE,
                    written,
                ),
            ],
        ),
        "## Spec",
        "",
    ]
    for name in page.spec_sections:
        lines += page.section(name)
    lines += ["## Status", ""]
    if t9k_status:
        lines += [
            "Written by the controller through the status subresource; the kinds with T9k's status",
            "share this shape. What each field means and when the controller sets it:",
            f"{status_link}.",
            "",
        ]
    else:
        lines += [
            "Written by the controller through the status subresource, in this kind's own shape.",
            "",
        ]
    for name in page.status_sections:
        lines += page.section(name)
    return "\n".join(lines).rstrip("\n") + "\n"


def reference_index(kinds: Mapping[str, JobKind[Any]], *, status_doc: str = STATUS_DOC) -> str:
    """The folder's README: one line per kind (by entry-point name), linking its page."""
    rows = [
        (
            kind.resource.kind,
            f"`{kind.resource.group}/{kind.resource.version}`",
            f"`{kind.resource.plural}`",
            _codes(kind.short_names) or NONE,
            f"[{page_name(name)}]({page_name(name)})",
        )
        for name, kind in kinds.items()
    ]
    lines = [
        "# API reference",
        "",
        "One page per job kind, generated from the kinds' pydantic models, the same models the",
        "CRDs (`jobcore manifests`) are generated from. Do not edit these pages by hand: after",
        "changing a model, run",
        "",
        f"    {REGENERATE}",
        "",
        "`tests/unit/cli/test_generate.py` fails when a page differs from what the models give.",
        "",
        *_table(("kind", "API version", "plural", "short names", "page"), rows),
        "The kinds with T9k's `status` share one shape; what the controller writes there, and",
        f"when, is in [Job status]({status_doc}). A kind with a status of its own (Kubeflow's",
        "MPIJob) describes it on its page.",
    ]
    return "\n".join(lines) + "\n"


def page_name(name: str) -> str:
    """The page of the kind installed as `name` (its entry point), e.g. `mpijob.md`."""
    return f"{name}.md"


def write_api_reference(kinds: Mapping[str, JobKind[Any]], folder: str | Path) -> list[Path]:
    """Write one page per kind, named after its entry point, and the index (`README.md`) into
    `folder`; return the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for name, kind in kinds.items():
        path = folder / page_name(name)
        path.write_text(api_reference(kind), encoding="utf-8")
        paths.append(path)
    index = folder / INDEX
    index.write_text(reference_index(kinds), encoding="utf-8")
    return [*paths, index]


# One kind's schema, walked -----------------------------------------------------------------


class _Page:
    """The sections of one kind's page: one per model reachable from its spec and status."""

    def __init__(self, kind: JobKind[Any]) -> None:
        status = hooks_of(kind).status_part.model
        refs, schema = models_json_schema(
            [(kind.spec_model, "validation"), (status, "validation")],
            by_alias=True,
            schema_generator=_SchemaWithFactoryDefaults,
        )
        self.defs: Mapping[str, Mapping[str, Any]] = schema.get("$defs", {})
        self.spec = _apischema.ref_name(refs[(kind.spec_model, "validation")]["$ref"])
        self.status = _apischema.ref_name(refs[(status, "validation")]["$ref"])
        self.models = _apischema.model_classes(kind.spec_model, status)
        self.order: list[str] = []
        self.paths: dict[str, list[str]] = {}
        self._visit(self.spec, "spec")
        self.spec_sections = list(self.order)
        self._visit(self.status, "status")
        self.status_sections = self.order[len(self.spec_sections) :]

    def _visit(self, name: str, path: str) -> None:
        """Sections in depth-first order of first appearance; every path a model appears at."""
        if name in self.paths:
            self.paths[name].append(path)
            return
        self.paths[name] = [path]
        self.order.append(name)
        if name in _KUBERNETES_TYPES:
            return
        for field, node in (self.defs[name].get("properties") or {}).items():
            for ref, at in _apischema.refs(node, f"{path}.{field}"):
                self._visit(ref, at)

    def section(self, name: str) -> list[str]:
        """A model's heading, docstring, where it appears, and its fields."""
        definition = self.defs[name]
        lines = [f"### {name}", ""]
        if definition.get("description"):
            lines += [str(definition["description"]).strip(), ""]
        url = _KUBERNETES_TYPES.get(name)
        if url is not None:
            lines += [
                f"A Kubernetes [{name}]({url}). jobcore types only the fields below; any other "
                f"field of a {name} is accepted and kept as written.",
                "",
            ]
            rows = self._flat_rows(name, "", {})
        else:
            if definition.get("additionalProperties") is True:
                lines += ["Fields not listed here are accepted and kept as written.", ""]
            rows = self._rows(name, prefix="", link=True)
        paths = ", ".join(f"`{path}`" for path in self.paths[name])
        lines += [f"Appears at {paths}.", ""]
        if rows:
            lines += _table(_FIELD_HEADER, rows)
            if any(row[2].endswith("\\*") for row in rows):
                lines += [_MODEL_REQUIRED_NOTE, ""]
        return lines

    def _rows(self, name: str, *, prefix: str, link: bool) -> list[Row]:
        definition = self.defs[name]
        required = set(definition.get("required") or ())
        model = self.models.get(name)
        by_model = _apischema.required_fields(model) if model is not None else required
        return [
            [
                f"`{prefix}{field}`",
                _apischema.type_text(node, linked=link),
                _apischema.default_text(
                    node, required=field in required, by_model=field in by_model
                ),
                _cell(str(node.get("description") or "")),
            ]
            for field, node in (definition.get("properties") or {}).items()
        ]

    def _flat_rows(self, name: str, prefix: str, seen: dict[str, str]) -> list[Row]:
        """A model's fields and its sub-models' fields, as dotted paths, without links."""
        seen[name] = prefix.rstrip(".")
        rows: list[Row] = []
        own = self._rows(name, prefix=prefix, link=False)
        for row, (field, node) in zip(
            own, (self.defs[name].get("properties") or {}).items(), strict=True
        ):
            rows.append(row)
            target = _apischema.object_ref(node)
            if target is None:
                continue
            ref, suffix = target
            if ref in seen:
                row[3] = _join(row[3], f"The same fields as `{seen[ref]}`.")
            else:
                rows += self._flat_rows(ref, f"{prefix}{field}{suffix}.", seen)
        return rows


def _codes(values: Iterable[str]) -> str:
    return ", ".join(f"`{value}`" for value in values)


def _cell(text: str) -> str:
    """Text fit for one table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _join(first: str, second: str) -> str:
    return f"{first} {second}" if first else second


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table and the blank line after it."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + " --- |" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
    ]
