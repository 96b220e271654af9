"""A tool call's input, filled from the conversation where the schema allows, made up only where it does not.

For each top-level property of the tool's `input_schema`, the first value found in this order that validates
against the property (and leaves the whole input valid) is taken:

1. an earlier tool result of the current task, a JSON object with a key of the property's name (a dependent call:
   `find_user` returned `{"user_id": "u_1"}`, `send_email` takes `user_id` from it);
2. an `enum` value that the user's text names;
3. by what the property's name and description ask for: an email address, a URL, a path or an identifier (order_id,
   "the order number": a token with a digit, "#4821" -> "4821"), from the user's text, then from the text of the
   task's earlier results (the latest first); an arithmetic expression or a date from the user's text; a place or
   a name (city, location, country, person...: the first capitalised words that do not start a sentence, "Paris",
   "New York"); a query or a text (query, question, prompt, message, topic, keyword...: the user's words without
   the small ones, "weather Paris", cut to the property's maxLength);
   an answer (answer, result, summary, response, reply, output: smolagents' `final_answer`): the text of the task's
   latest result, or else the user's text (smolagents sends its observations as user text);
4. a quoted string in the user's text, for any string property;
5. a number in the user's text (digits, or a number word up to twenty), for an integer or number property.

A value the user's text gave one property is not given to another, nor to another call of the same turn (that call
waits a turn and may take its value from the first one's result). A required property nothing fills is made up
(`harness.sim.schema_instances`, seeded by the request) and its path is reported as invented ("$.units"), so that
`harness bless` compares it by shape only; a required identifier nothing fills is reported as missing too (a model
asks for an order number rather than make one up). An optional property nothing fills is left out, as a model
leaves out what it has no value for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.sim.relevance import ARITHMETIC, EMAIL, PATH, STOP_WORDS, URL
from harness.sim.schema_instances import instance_for, validates

NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        [
            "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
            "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
        ]
    )
}
_NAMED = ("city", "location", "place", "country", "region", "destination", "origin", "town", "name", "person",
          "company", "customer", "recipient", "author")
_FREE_TEXT = ("query", "question", "prompt", "message", "topic", "keyword", "search", "text", "content", "term",
              "request", "instruction", "task", "body", "subject")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|`([^`]+)`|(?<!\w)'([^']+)'(?!\w)")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]\w)")
_IDENTIFIER = re.compile(r"(?<![\w-])#?([A-Za-z]*[-_]?\d[\w-]*)")  # "#4821" -> 4821, "SKU-0042", "ORD-7"
_CAPITALISED = re.compile(r"[A-Z][\w'-]*(?:\s+(?:of\s+|de\s+)?[A-Z][\w'-]*)*")


@dataclass(frozen=True)
class Filled:
    input: dict[str, Any]
    invented: tuple[str, ...]  # JSON paths ("$.units", "$" for the whole input) of what the simulator made up
    missing_ids: tuple[str, ...] = ()  # required identifiers the conversation does not hold (made up all the same)
    from_text: tuple[str, ...] = ()  # the values taken from the user's text


def _cues(name: str, sub: Mapping[str, Any]) -> list[str]:
    """The words of a property's name, description and format (city_name -> city, name)."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", f"{name} {sub.get('description') or ''} {sub.get('format') or ''}")
    return re.findall(r"[a-z0-9]+", text.lower())


def _asks(cues: list[str], *wanted: str) -> bool:
    return any(word.startswith(wanted) for word in cues)


def _names(text: str) -> list[str]:
    """Capitalised word runs that do not start a sentence: "Paris", "New York"."""
    found = []
    for match in _CAPITALISED.finditer(text):
        before = text[: match.start()].rstrip()
        if not before or before[-1] in ".!?:\n" or match.group().lower() in STOP_WORDS:
            continue
        found.append(match.group())
    return found


def _free_text(text: str, limit: Any = None) -> str:
    """The text's words without the small ones, cut at a word to `limit` characters (a maxLength)."""
    kept = [word.strip("?!.,;") for word in re.findall(r"[\w'./@:-]+", text) if word.lower() not in STOP_WORDS]
    words = [word for word in kept if word]
    if isinstance(limit, int) and limit > 0:
        while len(words) > 1 and len(" ".join(words)) > limit:
            words.pop()
    return " ".join(words) or text.strip()


def _numbers(text: str) -> list[int | float]:
    found: list[int | float] = []
    for match in _NUMBER.finditer(text):
        number = float(match.group())
        found.append(int(number) if number.is_integer() else number)
    found += [NUMBER_WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in NUMBER_WORDS]
    return found


def _from_results(name: str, results: Sequence[Any]) -> list[Any]:
    found = []
    for result in reversed(results):  # the latest result first
        items = result if isinstance(result, list) else [result]
        for item in items:
            if isinstance(item, Mapping) and name in item:
                found.append(item[name])
    return found


def _is_identifier(cues: list[str]) -> bool:
    return bool({"id", "ids", "identifier", "number", "code", "reference", "sku"} & set(cues))


def is_identifier(name: str, sub: Any) -> bool:
    """A property that names one thing (order_id, "The order number"): a model asks for it rather than make it up."""
    return isinstance(sub, Mapping) and sub.get("type") in ("string", "integer") and _is_identifier(_cues(name, sub))


@dataclass(frozen=True)
class Sources:
    """Where a call's values come from: the user's words, then what earlier calls of the task returned."""

    text: str  # the user's text of the current task
    results: Sequence[Any] = ()  # earlier results parsed as JSON (None where they are not), oldest first
    result_texts: Sequence[str] = ()  # the same results as text
    exclude: frozenset[str] = frozenset()  # values another call of this turn already took from the text

    def patterns(self) -> list[str]:
        """Texts to find paths, URLs, addresses and identifiers in: the user's, then the latest results first."""
        return [self.text, *reversed(self.result_texts)]


def candidates(name: str, sub: Mapping[str, Any], sources: Sources) -> list[Any]:
    """Values for one property from the conversation, best first (the module's order)."""
    text = sources.text
    values: list[Any] = list(_from_results(name, sources.results))
    lowered = text.lower()
    enum = sub.get("enum")
    if isinstance(enum, list):
        values += [v for v in enum if isinstance(v, str) and re.search(rf"\b{re.escape(v.lower())}\b", lowered)]
        return values
    kind = sub.get("type")
    cues = _cues(name, sub)
    found: list[Any] = []

    def matches(pattern: re.Pattern[str]) -> list[str]:
        return [match.group().strip() for source in sources.patterns() for match in pattern.finditer(source)]

    if kind in ("string", None) or (isinstance(kind, list) and "string" in kind):
        if _asks(cues, "email"):
            found += matches(EMAIL)
        if _asks(cues, "url", "uri", "link"):
            found += matches(URL)
        if _asks(cues, "path", "file", "dir", "folder", "source", "destination", "target", "src", "dest"):
            found += matches(PATH)
        if _asks(cues, "expression", "formula", "equation", "calculation", "math"):
            found += [match.group().strip() for match in ARITHMETIC.finditer(text)]
        if _asks(cues, "date"):
            found += _DATE.findall(text)
        if _is_identifier(cues):
            found += [match.group(1) for source in sources.patterns() for match in _IDENTIFIER.finditer(source)]
        if _asks(cues, *_NAMED):
            found += _names(text)
        if _asks(cues, "answer", "result", "summary", "response", "reply", "output"):
            # A closing tool (final_answer) answers with the latest result, or else with the user's last words (an
            # agent that sends its observations as user text, as smolagents does).
            found.append(sources.result_texts[-1] if sources.result_texts else text.strip())
        if _asks(cues, *_FREE_TEXT):
            found.append(_free_text(text, sub.get("maxLength")))
        found += [next(part for part in match.groups() if part) for match in _QUOTED.finditer(text)]
    if kind in ("integer", "number") or (isinstance(kind, list) and {"integer", "number"} & set(kind)):
        found += [n for n in _numbers(text) if kind != "integer" or isinstance(n, int)]
    return values + [value for value in found if not (isinstance(value, str) and value in sources.exclude)]


def fill(schema: Mapping[str, Any], sources: Sources, *seed_parts: Any) -> Filled:
    """The input for one call: conversation values where they fit, made-up ones (reported) where they must."""
    invented_all = instance_for(schema, *seed_parts)
    properties = schema.get("properties")
    if not isinstance(invented_all, dict) or not isinstance(properties, Mapping):
        return Filled(invented_all if isinstance(invented_all, dict) else {}, ("$",) if invented_all else ())
    required = [name for name in schema.get("required") or [] if isinstance(name, str)]
    current = {name: value for name, value in invented_all.items() if name in required}
    if not validates(schema, current):
        current = dict(invented_all)
    taken: set[str] = set()
    used: list[str] = []  # a value the text gave one property is not given to the next as well
    for name, sub in properties.items():
        if not isinstance(sub, Mapping):
            continue
        for value in candidates(name, sub, sources):
            if isinstance(value, str) and value in used:
                continue
            trial = {**current, name: value}
            if validates(schema, trial):
                current, used = trial, [*used, value] if isinstance(value, str) else used
                taken.add(name)
                break
    made_up = [name for name in current if name not in taken]
    invented = tuple(f"$.{name}" if re.fullmatch(r"\w+", name) else f"$[{json.dumps(name)}]" for name in made_up)
    missing = tuple(name for name in made_up if name in required and is_identifier(name, properties.get(name)))
    return Filled(current, invented, missing, tuple(v for v in used if v in sources.text))
