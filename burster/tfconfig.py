"""Turn ``terraform output -json`` of the example roots under terraform/ into config sections.

Each output of a root is named after a key of one cloud section (``launch_template_ids`` is
``clouds.aws.launch_template_ids``); an output named after a cloud (``aws``) whose value is an
object holds that cloud's keys, so ``output "aws" { value = module.burster }`` works too. The
result is TOML (``[clouds.aws]`` with ``enabled = true``) validated by :func:`parse_config`.
An output named ``cluster`` (the modules' ``var.cluster``: the nodes' tag, the permissions' scope) is a
key of every cloud section, so it goes to the section of the other outputs of its root; the config
then requires it to be ``controller.cluster``.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from burster.config import AwsConfig, AzureConfig, GcpConfig, parse_config
from burster.errors import ConfigError, InputError

CLOUD_MODELS: dict[str, type[BaseModel]] = {"aws": AwsConfig, "gcp": GcpConfig, "azure": AzureConfig}
CLOUDS = tuple(CLOUD_MODELS)

# Config keys an output may be named after, per cloud, in the config's field order.
OUTPUT_KEYS: dict[str, tuple[str, ...]] = {
    cloud: tuple(k for k in model.model_fields if k != "enabled") for cloud, model in CLOUD_MODELS.items()
}
SHARED_KEYS = ("cluster",)  # keys of every cloud section: placed by the root's other outputs
_OWNER = {key: cloud for cloud, keys in OUTPUT_KEYS.items() for key in keys if key not in SHARED_KEYS}


def parse_outputs(text: str, source: str) -> dict[str, Any]:
    """Read ``terraform output -json`` text; return output name -> value, leaving out null values."""
    return read_outputs(text, source)[0]


def _not_outputs(data: dict[str, Any], source: str) -> None:
    """Name the command to run when ``data`` is ``terraform show -json`` output or a state file."""
    if "format_version" in data and ("values" in data or "planned_values" in data):
        what = "`terraform show -json` output"
    elif "terraform_version" in data and "outputs" in data:
        what = "a Terraform state file"
    else:
        return
    raise InputError(f"{source}: this is {what}, not `terraform output -json`; run `terraform output -json` "
                     "in the applied root and pass that")


def read_outputs(text: str, source: str) -> tuple[dict[str, Any], set[str]]:
    """``parse_outputs`` and the names of the outputs marked sensitive (their values never go in errors)."""
    text = text.removeprefix("\ufeff")  # a UTF-8 BOM (PowerShell's `Out-File -Encoding utf8`), as load_config
    if not text.strip():
        raise InputError(f"{source}: empty input; pipe in `terraform output -json` of an applied root")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"{source}: not valid JSON at line {err.lineno}, column {err.colno}: {err.msg}; "
            "expected the output of `terraform output -json`"
        ) from None
    except (RecursionError, ValueError) as err:  # nested too deeply; a number of over 4,300 digits
        raise InputError(f"{source}: not `terraform output -json` output ({str(err)[:120]})") from None
    if not isinstance(data, dict):
        raise InputError(f"{source}: expected a JSON object of outputs, got {type(data).__name__}")
    if not data:
        raise InputError(f"{source}: no outputs; run `terraform apply` in the example root first")
    _not_outputs(data, source)
    values: dict[str, Any] = {}
    sensitive: set[str] = set()
    for name, entry in data.items():
        if not isinstance(entry, dict) or "value" not in entry:
            raise InputError(
                f"{source}: output {name!r} has no \"value\"; expected `terraform output -json` "
                "(not `terraform output -json NAME` or `terraform show -json`)"
            )
        if entry["value"] is not None:
            values[name] = entry["value"]
        if entry.get("sensitive") is not False:  # terraform always writes it; absent: assume sensitive
            sensitive.add(name)
    return values, sensitive


def _known(cloud: str | None) -> str:
    clouds = (cloud,) if cloud else CLOUDS
    return "; ".join(f"clouds.{c}: {', '.join(OUTPUT_KEYS[c])}" for c in clouds)


def _place(sections: dict[str, dict[str, Any]], cloud: str, key: str, value: Any, label: str) -> None:
    section = sections.setdefault(cloud, {})
    if key in section and section[key] != value:
        raise ConfigError(f"{label}: clouds.{cloud}.{key} is given twice with different values")
    section[key] = value


def sections_from_outputs(
    outputs: Mapping[str, Any], source: str, cloud: str | None = None,
    into: dict[str, dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Sort outputs into cloud sections (cloud -> key -> value); ``cloud`` restricts to one section."""
    if cloud is not None and cloud not in CLOUD_MODELS:
        raise ConfigError(f"unknown cloud {cloud!r}; choose one of {', '.join(CLOUDS)}")
    sections: dict[str, dict[str, Any]] = {} if into is None else into
    placed: set[str] = set() if cloud is None else {cloud}  # the clouds this root's outputs are for
    shared = {name: value for name, value in outputs.items() if name in SHARED_KEYS}
    for name, value in outputs.items():
        if name in shared:
            continue
        if name in CLOUD_MODELS and isinstance(value, dict):
            pairs: Iterable[tuple[str, str, str, Any]] = (
                (name, f"{name}.{k}", str(k), v) for k, v in value.items())
        else:
            pairs = ((_OWNER.get(name, ""), name, name, value),)
        for owner, label, key, val in pairs:
            if val is None:
                continue
            if key not in OUTPUT_KEYS.get(owner, ()):
                raise ConfigError(
                    f"{source}: output {label!r} is not a Burster config key; outputs must be named "
                    f"after one ({_known(cloud)})"
                )
            if cloud is not None and owner != cloud:
                raise ConfigError(
                    f"{source}: output {label!r} belongs to [clouds.{owner}], not [clouds.{cloud}]; "
                    f"drop --cloud {cloud} or pass only the {cloud} root's outputs"
                )
            _place(sections, owner, key, val, f"{source}: output {label!r}")
            placed.add(owner)
    for name, value in shared.items():
        if value is None:
            continue
        if not placed:
            raise ConfigError(f"{source}: output {name!r} is every cloud's key, and no other output of this root "
                              "says which cloud it is for; pass the root's whole `terraform output -json`")
        for owner in sorted(placed):
            _place(sections, owner, name, value, f"{source}: output {name!r}")
    return sections


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + "}"
    raise ConfigError(f"cannot write {type(value).__name__} value {value!r} as TOML")


def _entry(cloud: str, key: str, name: str, value: Any) -> str:
    """The TOML line ``name = value``, or an error naming the config key it was for."""
    where = f"clouds.{cloud}.{key}".encode("utf-8", "backslashreplace").decode("utf-8")
    try:
        text = f"{_key(name)} = {_value(value)}"
        text.encode("utf-8")
    except ConfigError as err:
        raise ConfigError(f"{where}: {err} (TOML has no null: give it a value in terraform or drop it)") from None
    except UnicodeEncodeError:
        raise ConfigError(f"{where}: the output holds text that is not valid Unicode (an unpaired "
                          "surrogate such as \\ud800)") from None
    return text


def render_toml(sections: Mapping[str, Mapping[str, Any]]) -> str:
    """Write ``[clouds.<cloud>]`` tables, maps as sub-tables, keys in the config's field order."""
    blocks = []
    for cloud in CLOUDS:
        if cloud not in sections:
            continue
        section = sections[cloud]
        order = ("enabled", *OUTPUT_KEYS[cloud])
        keys = [k for k in order if k in section] + [k for k in section if k not in order]
        lines = [f"[clouds.{cloud}]"]
        lines += [_entry(cloud, k, k, section[k]) for k in keys if not isinstance(section[k], dict)]
        for k in keys:
            if isinstance(section[k], dict):
                lines += ["", f"[clouds.{cloud}.{k}]"]
                lines += [_entry(cloud, f"{k}.{n}", str(n), v) for n, v in section[k].items()]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def config_from_terraform(sources: Iterable[tuple[str, str]], cloud: str | None = None) -> str:
    """Turn (source name, ``terraform output -json`` text) pairs into validated TOML config sections."""
    sections: dict[str, dict[str, Any]] = {}
    names = []
    hidden: set[tuple[str, ...]] = set()
    for source, text in sources:
        names.append(source)
        values, sensitive = read_outputs(text, source)
        sections_from_outputs(values, source, cloud, into=sections)
        hidden |= {("clouds", n) if n in CLOUD_MODELS else ("clouds", _OWNER[n], n)
                   for n in sensitive if n in values and n not in SHARED_KEYS}
        hidden |= {("clouds", c, n) for n in sensitive if n in values and n in SHARED_KEYS for c in CLOUDS}
    if not sections:
        raise InputError(f"{', '.join(names) or '<no input>'}: every output is null; nothing to write")
    for section in sections.values():
        section["enabled"] = True
    toml_text = render_toml(sections)
    data = tomllib.loads(toml_text)
    cluster = _one_cluster(sections, names)
    if cluster is not None:  # checked against the config's own [controller] when it is loaded
        data["controller"] = {"cluster": cluster}
        toml_text = f"# these sections need [controller] cluster = {_string(cluster)}\n{toml_text}"
    parse_config(data, source=f"terraform outputs of {', '.join(names)}", hidden=hidden)
    return toml_text


def _one_cluster(sections: Mapping[str, Mapping[str, Any]], names: Sequence[str]) -> str | None:
    """The cluster the roots were applied for (None: no root says); roots of two are an error."""
    clusters = {cloud: s["cluster"] for cloud, s in sections.items() if isinstance(s.get("cluster"), str)}
    if len(set(clusters.values())) > 1:
        each = ", ".join(f"{cloud}: {c!r}" for cloud, c in sorted(clusters.items()))
        raise ConfigError(f"{', '.join(names)}: the roots were applied for different clusters ({each}); one "
                          "controller serves one cluster (controller.cluster): apply them with the same var.cluster")
    return next(iter(clusters.values()), None)
