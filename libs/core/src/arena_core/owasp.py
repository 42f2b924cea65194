"""The OWASP lists the objective catalogue is mapped to: ids, titles, where to read them.

* OWASP Top 10 for LLM Applications **2025** (v2.0), ids ``LLM01:2025`` ... ``LLM10:2025``,
  https://genai.owasp.org/llm-top-10/ (one page per risk, linked below). The OWASP GenAI
  Security Project published a 2026 edition of that list in August 2026, which renumbers it
  (system prompt leakage became ``LLM08:2026`` "Hidden Context Exposure"); the issue that
  introduced the catalogue asks for the 2025 ids, which are what code-scanning tools and
  most readers know today, so ids here always carry their year and never collide.
* OWASP Top 10 for Agentic Applications (the 2026 edition, v1.0, December 2025), ids
  ``ASI01`` ... ``ASI10`` without a year, as the document writes them,
  https://genai.owasp.org/resource/owasp-top-10-for-agentic-applications-for-2026/.

The titles are OWASP's; the one-line summaries are ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from arena_core.errors import InvalidInputError


@dataclass(frozen=True, slots=True)
class OwaspCategory:
    """One entry of an OWASP list."""

    id: str
    title: str
    list: str
    """``owasp-llm-2025`` or ``owasp-agentic``: the objective set of the list."""
    url: str
    summary: str


_LLM = "https://genai.owasp.org/llmrisk/"
_ASI = "https://genai.owasp.org/resource/owasp-top-10-for-agentic-applications-for-2026/"

_ENTRIES = (
    OwaspCategory(
        "LLM01:2025",
        "Prompt Injection",
        "owasp-llm-2025",
        f"{_LLM}llm01-prompt-injection/",
        "Input, direct or hidden in content the model reads, changes what the model does.",
    ),
    OwaspCategory(
        "LLM02:2025",
        "Sensitive Information Disclosure",
        "owasp-llm-2025",
        f"{_LLM}llm022025-sensitive-information-disclosure/",
        "Personal data, credentials or business secrets come out in the model's output.",
    ),
    OwaspCategory(
        "LLM03:2025",
        "Supply Chain",
        "owasp-llm-2025",
        f"{_LLM}llm032025-supply-chain/",
        "Compromised third-party models, adapters, datasets or packages.",
    ),
    OwaspCategory(
        "LLM04:2025",
        "Data and Model Poisoning",
        "owasp-llm-2025",
        f"{_LLM}llm042025-data-and-model-poisoning/",
        "Tampered training, tuning or embedding data plants backdoors or bias.",
    ),
    OwaspCategory(
        "LLM05:2025",
        "Improper Output Handling",
        "owasp-llm-2025",
        f"{_LLM}llm052025-improper-output-handling/",
        "Output reaches a browser, shell or query unvalidated: XSS, injection, SSRF.",
    ),
    OwaspCategory(
        "LLM06:2025",
        "Excessive Agency",
        "owasp-llm-2025",
        f"{_LLM}llm062025-excessive-agency/",
        "More functions, permissions or autonomy than needed, so a manipulated output does harm.",
    ),
    OwaspCategory(
        "LLM07:2025",
        "System Prompt Leakage",
        "owasp-llm-2025",
        f"{_LLM}llm072025-system-prompt-leakage/",
        "The instructions, and the secrets or rules written into them, are extracted.",
    ),
    OwaspCategory(
        "LLM08:2025",
        "Vector and Embedding Weaknesses",
        "owasp-llm-2025",
        f"{_LLM}llm082025-vector-and-embedding-weaknesses/",
        "Retrieval stores leak across tenants, get poisoned or inverted.",
    ),
    OwaspCategory(
        "LLM09:2025",
        "Misinformation",
        "owasp-llm-2025",
        f"{_LLM}llm092025-misinformation/",
        "False output that looks credible, and people relying on it.",
    ),
    OwaspCategory(
        "LLM10:2025",
        "Unbounded Consumption",
        "owasp-llm-2025",
        f"{_LLM}llm102025-unbounded-consumption/",
        "Uncontrolled inference: denial of service, runaway cost, model extraction.",
    ),
    OwaspCategory(
        "ASI01",
        "Agent Goal Hijack",
        "owasp-agentic",
        _ASI,
        "An attacker redirects the agent's goals or plan, by injection or forged inputs.",
    ),
    OwaspCategory(
        "ASI02",
        "Tool Misuse and Exploitation",
        "owasp-agentic",
        _ASI,
        "The agent uses its legitimate tools unsafely, within the privileges it has.",
    ),
    OwaspCategory(
        "ASI03",
        "Identity and Privilege Abuse",
        "owasp-agentic",
        _ASI,
        "Delegated credentials and identities are abused; forged agent personas.",
    ),
    OwaspCategory(
        "ASI04",
        "Agentic Supply Chain Vulnerabilities",
        "owasp-agentic",
        _ASI,
        "Tampered tools, plugins, agent cards or prompt templates loaded by the agent.",
    ),
    OwaspCategory(
        "ASI05",
        "Unexpected Code Execution (RCE)",
        "owasp-agentic",
        _ASI,
        "Code the agent writes or triggers runs on a host: injection, eval, escapes.",
    ),
    OwaspCategory(
        "ASI06",
        "Memory & Context Poisoning",
        "owasp-agentic",
        _ASI,
        "Memory, summaries or retrieval stores are corrupted across sessions.",
    ),
    OwaspCategory(
        "ASI07",
        "Insecure Inter-Agent Communication",
        "owasp-agentic",
        _ASI,
        "Agent-to-agent messages without authentication or integrity; fake peers.",
    ),
    OwaspCategory(
        "ASI08",
        "Cascading Failures",
        "owasp-agentic",
        _ASI,
        "One fault spreads and amplifies across agents and workflows.",
    ),
    OwaspCategory(
        "ASI09",
        "Human-Agent Trust Exploitation",
        "owasp-agentic",
        _ASI,
        "The agent exploits human over-trust so that a person does the harmful thing.",
    ),
    OwaspCategory(
        "ASI10",
        "Rogue Agents",
        "owasp-agentic",
        _ASI,
        "An agent drifts outside its scope and acts against its owner's intent.",
    ),
)

OWASP_CATEGORIES: Mapping[str, OwaspCategory] = MappingProxyType({entry.id: entry for entry in _ENTRIES})
"""Every OWASP entry the catalogue may cite, by id."""

OWASP_LISTS: Mapping[str, str] = MappingProxyType(
    {
        "owasp-llm-2025": "OWASP Top 10 for LLM Applications 2025",
        "owasp-agentic": "OWASP Top 10 for Agentic Applications (2026 edition)",
    }
)


def parse_category_threshold(text: str) -> tuple[str, float]:
    """``"LLM07:2025=0.1"`` -> ``("LLM07:2025", 0.1)``; the id must be a known one, the rate in 0..1.

    Raises:
        InvalidInputError: anything else, saying what was expected.
    """
    category, sep, raw = text.strip().rpartition("=")
    category = category.strip().upper()
    if not sep or category not in OWASP_CATEGORIES:
        raise InvalidInputError(
            f"expected CATEGORY=RATE with an OWASP id such as LLM07:2025 or ASI01, got '{text[:80]}'"
        )
    try:
        rate = float(raw)
    except ValueError:
        rate = -1.0
    if not 0.0 <= rate <= 1.0:
        raise InvalidInputError(f"the rate of {category} must be a number from 0 to 1, got '{raw[:40]}'")
    return category, rate


def category_title(category_id: str) -> str:
    """``"LLM07:2025 System Prompt Leakage"``; an id not in the lists is returned as it is."""
    entry = OWASP_CATEGORIES.get(category_id)
    return f"{entry.id} {entry.title}" if entry else category_id


__all__ = ["OWASP_CATEGORIES", "OWASP_LISTS", "OwaspCategory", "category_title", "parse_category_threshold"]
