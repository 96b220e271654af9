"""Which of the offered tools a request's words call for: how `sim-auto` decides to call a tool or to answer in text.

Word overlap, nothing cleverer, so that a test author can predict it:

- The request's words are the current task's user text (the last user turn that has text), lowercased, split at
  anything that is not a letter or a digit, with a plural "s" taken off and small words (`a`, `the`, `what`,
  `hi`, `please`...: `STOP_WORDS`) left out. Some things in the text stand for words of their own (`CUES`): a
  path (`/tmp`) adds path, file, directory, folder; a URL adds url, link, web, page, fetch; an email address
  adds email; an arithmetic expression (`17 * 23`) adds calculate, calculator, math, arithmetic, expression,
  compute, evaluate.
- A tool's words are those of its name (snake_case and camelCase split), each counting 3, of its parameters'
  names, counting 2, and of its description and its parameters' descriptions, counting 1 (a word counts once,
  at its highest). An Anthropic-defined tool (memory, bash, text editor, computer) has the words of what it does.
- A tool's score is the sum, over the request's words it has, of the word's count divided by how many offered
  tools have the word: a word every tool has ("file" among twelve file tools) tells little.
- The best-scoring tool is called when it has at least one of the request's words in its name or a parameter's
  name, or two in its description (`MIN_EVIDENCE`). Then the words it matched are set aside, and the next tool
  is called only if its score on the words left reaches `MIN_SCORE`, and so on: each tool called must answer
  for words the others do not. Ties go to the tool with the shorter name, then to the one offered first. The
  tools chosen are called in the order the text names them (where the first word each matched stands).
- No tool chosen: the answer is text (a greeting, a question no tool serves).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

NAME_WEIGHT, PARAMETER_WEIGHT, DESCRIPTION_WEIGHT = 3, 2, 1
MIN_EVIDENCE = 2  # the first tool needs a name or parameter word, or two description words
MIN_SCORE = 1.0  # a further tool needs this much on the words the tools before it left

STOP_WORDS = frozenset(
    [
        "a", "an", "the", "and", "or", "but", "if", "then", "than", "so", "of", "in", "on", "at", "to", "for",
        "from", "by", "with", "about", "into", "onto", "over", "under", "as", "is", "are", "was", "were", "be",
        "been", "being", "am", "do", "does", "did", "done", "have", "has", "had", "i", "me", "my", "mine", "you",
        "your", "yours", "we", "our", "us", "it", "its", "this", "that", "these", "those", "there", "here", "what",
        "which", "who", "whom", "whose", "when", "where", "why", "how", "can", "could", "would", "should", "will",
        "shall", "may", "might", "must", "please", "tell", "say", "know", "want", "need", "like", "just", "also",
        "some", "any", "all", "each", "every", "no", "not", "yes", "ok", "okay", "hi", "hello", "hey", "thanks",
        "thank", "sure", "let", "lets", "now", "today", "one", "via", "using", "use",
    ]
)

PATH = re.compile(r"(?<![\w:/])(?:~|\.{1,2})?/[\w.\-][\w.\-/]*")
URL = re.compile(r"https?://[^\s'\"<>)]+")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
# Digits, an operator, digits: "17 * 23", "(2 + 3) / 4"; a dash only with spaces around it (2026-09-07 is a date).
ARITHMETIC = re.compile(r"[\d(][\d.\s()]*(?:[*/×÷^+]|\s-\s)[\d.\s()*/×÷^+-]*\d\)?")

CUES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (PATH, ("path", "file", "directory", "folder")),
    (URL, ("url", "link", "web", "page", "fetch")),
    (EMAIL, ("email",)),
    (ARITHMETIC, ("calculate", "calculator", "math", "arithmetic", "expression", "compute", "evaluate")),
)

# What an Anthropic-defined client tool does, in words (it sends no name or description of its own that says so).
DEFINED_WORDS = {
    "memory": "memory remember recall note save store",
    "bash": "bash shell command run execute terminal script",
    "text_editor": "edit editor file text view create replace write",
    "computer": "computer screen screenshot click type browser desktop",
}


def stem(word: str) -> str:
    word = word.lower().removesuffix("'s")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words(text: str) -> list[str]:
    """The words of a text or a name, stemmed, without small words and numbers, in order, each once."""
    split = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    found = (stem(raw) for raw in re.findall(r"[A-Za-z][A-Za-z0-9']*", split))
    return list(dict.fromkeys(word for word in found if len(word) > 1 and word not in STOP_WORDS))


def request_words(text: str) -> list[str]:
    """The words a request's text calls tools with, in the order the text has them: its own words, and those its
    paths, URLs... stand for, where those stand."""
    placed = [(match.start(), word) for match in re.finditer(r"[A-Za-z][A-Za-z0-9']*", text)
              for word in words(match.group())]
    placed += [(match.start(), cue) for pattern, cues in CUES for match in pattern.finditer(text) for cue in cues]
    return list(dict.fromkeys(word for _, word in sorted(placed, key=lambda item: item[0])))


@dataclass(frozen=True)
class Profile:
    name: str
    weights: Mapping[str, int]  # word -> its count (3 name, 2 parameter name, 1 description)


def profile(tool: Mapping[str, Any], defined: str | None = None) -> Profile:
    weights: dict[str, int] = {}

    def add(text: Any, weight: int) -> None:
        if isinstance(text, str):
            for word in words(text):
                weights[word] = max(weights.get(word, 0), weight)

    name = str(tool.get("name", ""))
    add(name, NAME_WEIGHT)
    add(tool.get("description"), DESCRIPTION_WEIGHT)
    if defined:
        add(DEFINED_WORDS.get(defined, defined), DESCRIPTION_WEIGHT + 1)
    schema = tool.get("input_schema")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    for parameter, sub in (properties or {}).items() if isinstance(properties, Mapping) else ():
        add(parameter, PARAMETER_WEIGHT)
        if isinstance(sub, Mapping):
            add(sub.get("description"), DESCRIPTION_WEIGHT)
    return Profile(name, weights)


def _rarity(profiles: Iterable[Profile]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for each in profiles:
        for word in each.weights:
            counts[word] = counts.get(word, 0) + 1
    return counts


def score(tool: Profile, wanted: Iterable[str], shared_by: Mapping[str, int]) -> float:
    return sum(tool.weights[word] / shared_by[word] for word in wanted if word in tool.weights)


def _evidence(tool: Profile, wanted: Iterable[str]) -> int:
    return sum(tool.weights[word] for word in wanted if word in tool.weights)


def chosen(profiles: list[Profile], text: str) -> list[str]:
    """The names of the tools the text calls for, in the order the text asks for them (where the first word each
    matched stands; see the module's rules); [] for a text answer."""
    order = request_words(text)
    wanted = set(order)
    shared_by = _rarity(profiles)
    picked: list[tuple[int, str]] = []  # (where in the text, tool name)
    left = [each for each in profiles]
    while wanted and left:
        ranked = sorted(
            enumerate(left), key=lambda item: (-score(item[1], wanted, shared_by), len(item[1].name), item[0])
        )
        best = ranked[0][1]
        best_score = score(best, wanted, shared_by)
        if not picked and _evidence(best, wanted) < MIN_EVIDENCE:
            break
        if picked and (best_score < MIN_SCORE or _evidence(best, wanted) < MIN_EVIDENCE):
            break
        picked.append((min(order.index(word) for word in wanted if word in best.weights), best.name))
        wanted -= set(best.weights)
        left.remove(best)
    return [name for _, name in sorted(picked)]


def best_for(profiles: list[Profile], text: str) -> str | None:
    """The tool that scores best for the text, however low (None when none shares a word): what a model forced to
    call a tool (`tool_choice: any`) calls."""
    wanted = set(request_words(text))
    shared_by = _rarity(profiles)
    ranked = sorted(
        ((score(each, wanted, shared_by), -len(each.name), -position, each.name) for position, each in
         enumerate(profiles)),
        reverse=True,
    )
    return ranked[0][3] if ranked and ranked[0][0] > 0 else None
