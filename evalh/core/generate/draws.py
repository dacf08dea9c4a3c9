"""What a generator is asked and what its reply gives: the corpus read, each case's draw
(strategy, row or topic; seeded by the run's seed and the suite's name), the prompt rendered
over the row without its withheld fields, the reply read back, and the fields carried into
the case."""

from __future__ import annotations

import csv
import hashlib
import io
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalh.errors import ConfigError
from evalh.models import sha256_of

if TYPE_CHECKING:
    from evalh.generate_spec import GeneratorConfig, StrategyConfig


_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Row:
    id: str
    fields: dict[str, Any]
    sha256: str


@dataclass
class Corpus:
    display: str
    sha256: str
    rows: list[Row]


def _row(display: str, where: str, obj: Any, id_key: str, text_key: str) -> Row:
    if not isinstance(obj, dict):
        raise ConfigError(f"{display}:{where}: a corpus row must be an object")
    rid = obj.get(id_key)
    if not isinstance(rid, (str, int)) or isinstance(rid, bool) or str(rid) == "":
        raise ConfigError(f"{display}:{where}: {id_key}: missing (each row needs an id)")
    if not isinstance(obj.get(text_key), str):
        raise ConfigError(f"{display}:{where}: {text_key}: missing or not text")
    return Row(str(rid), dict(obj), sha256_of(obj))


def load_corpus(path: Path, display: str, id_key: str = "id", text_key: str = "text") -> Corpus:
    """The rows of a JSONL or CSV file, or of a directory of `.txt` files, validated: every
    row an object with a unique id and a text. Bad input: one line naming file and line."""
    rows: list[Row] = []
    digest = hashlib.sha256()
    if path.is_dir():
        for f in sorted(path.glob("*.txt")):
            data = f.read_bytes()
            digest.update(f.name.encode() + b"\0" + data + b"\0")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ConfigError(f"{display}/{f.name}: not valid UTF-8") from None
            rows.append(_row(f"{display}/{f.name}", "1", {id_key: f.stem, text_key: text}, id_key, text_key))
    else:
        data = path.read_bytes()
        digest.update(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{display}: not valid UTF-8") from None
        if path.suffix.lower() == ".csv":
            reader = csv.DictReader(io.StringIO(text))
            for n, rec in enumerate(reader, start=2):
                rows.append(_row(display, str(n), dict(rec), id_key, text_key))
        else:
            for n, line in enumerate(text.splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ConfigError(f"{display}:{n}: not JSON: {exc}") from None
                rows.append(_row(display, str(n), obj, id_key, text_key))
    if not rows:
        raise ConfigError(f"{display}: the corpus has no rows")
    seen: dict[str, int] = {}
    for i, r in enumerate(rows):
        if r.id in seen:
            raise ConfigError(f"{display}: row id {r.id!r} appears twice")
        seen[r.id] = i
    return Corpus(display, digest.hexdigest(), rows)


def visible_row(row: Row, withhold: list[str]) -> dict[str, Any]:
    """The row as the generator sees it: no withheld field, and no withheld value in the
    other fields' text (a name the text repeats is blanked too)."""
    hidden = [str(row.fields[k]) for k in withhold if isinstance(row.fields.get(k), (str, int)) and str(row.fields[k])]
    out: dict[str, Any] = {}
    for k, v in row.fields.items():
        if k in withhold:
            continue
        if isinstance(v, str):
            for h in sorted(hidden, key=len, reverse=True):
                v = v.replace(h, "[withheld]")
        out[k] = v
    return out


def words(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(text))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass
class Draw:
    """What one case is written from."""

    index: int
    strategy: StrategyConfig
    row: Row | None = None
    topic: str | None = None


def draws(spec: GeneratorConfig, corpus: Corpus | None, count: int, seed: int, suite: str) -> list[Draw]:
    """The seeded sample: strategy, then row or topic, for each case in order."""
    rng = random.Random(f"{seed}:{suite}:generate")
    weights = [s.weight for s in spec.strategies]
    out = []
    for i in range(count):
        strategy = rng.choices(spec.strategies, weights=weights)[0]
        if strategy.palette is not None:
            out.append(Draw(i, strategy, topic=rng.choice(strategy.palette)))
        else:
            assert corpus is not None
            out.append(Draw(i, strategy, row=rng.choice(corpus.rows)))
    return out


@lru_cache(maxsize=64)
def _template(source: str, name: str) -> Any:
    """A strategy's template compiled once (7 ms for the shipped prompts), not once a case."""
    from evalh.targets import templates

    return templates.compile_template(source, name)


def render_prompt(spec: GeneratorConfig, draw: Draw, avoid: list[str]) -> tuple[str | None, str]:
    from evalh.targets.templates import render

    variables = {
        "row": visible_row(draw.row, spec.withhold) if draw.row is not None else {},
        "row_id": draw.row.id if draw.row is not None else None,
        "topic": draw.topic, "avoid": list(avoid), "strategy": draw.strategy.name,
    }
    name = f"generate.strategies.{draw.strategy.name}"
    system = None
    if draw.strategy.system:
        system = render(_template(draw.strategy.system, f"{name}.system"), f"{name}.system", variables)
    return system, render(_template(draw.strategy.prompt, f"{name}.prompt"), f"{name}.prompt", variables)


def read_reply(spec: GeneratorConfig, text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the case input, None) or (None, why the reply is garbage)."""
    body = text.strip()
    if spec.reply == "text":
        body = body.strip().strip('"“”').strip()
        if not body:
            return None, "the reply is empty"
        if len(body) > spec.max_chars:
            return None, f"the reply is {len(body)} characters, over max_chars {spec.max_chars}"
        return {spec.input_field: body}, None
    from evalh.targets.model import parse_json_reply

    try:
        obj = parse_json_reply(body)
    except Exception:
        return None, "the reply is not JSON"
    if not isinstance(obj, dict):
        return None, "the reply is not a JSON object"
    value = obj.get(spec.input_field)
    if not isinstance(value, str) or not value.strip():
        return None, f"the reply has no text at {spec.input_field!r}"
    if len(value) > spec.max_chars:
        return None, f"{spec.input_field!r} is {len(value)} characters, over max_chars {spec.max_chars}"
    return obj, None


def carried(src: str, draw: Draw, reply: dict[str, Any] | None) -> Any:
    """The value of a source (`row.x|topic`: the first with a value)."""
    for part in src.split("|"):
        v = _carried(part, draw, reply)
        if v is not None:
            return v
    return None


def _carried(src: str, draw: Draw, reply: dict[str, Any] | None) -> Any:
    from evalh.fields import MISSING, pick

    if src == "strategy":
        return draw.strategy.name
    if src == "topic":
        return draw.topic
    if src == "row_id":
        return draw.row.id if draw.row else None
    root, _, rest = src.partition(".")
    base = (draw.row.fields if draw.row else None) if root == "row" else reply
    v = pick(base, rest) if base is not None else MISSING
    return None if v is MISSING else v
