"""The Anthropic proposer: a model writes the next candidate from the reference, the roofline numbers,
retrieved knowledge, the incumbent and its measurements, and the last error.

Structured output through a forced tool call (`submit_kernel`), prompt caching on the static part of the
prompt, token and cost accounting, the SDK's retries with backoff on 429/5xx, and one-line errors for a
missing or invalid key and for no network. The model id comes from --model / AKA_MODEL.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from aka_tui.agent.offline import Proposal
from aka_tui.agent.proposers import DEFAULT_MODEL
from aka_tui.errors import ProposerError

# USD per million tokens (input, output); cache writes cost 1.25x input, cache reads 0.1x input.
# Assumed list prices by model tier; override with AKA_PRICE_IN / AKA_PRICE_OUT when they differ.
PRICES = {"opus": (15.0, 75.0), "sonnet": (3.0, 15.0), "haiku": (1.0, 5.0)}
TOOL = {
    "name": "submit_kernel",
    "description": "Submit the next candidate: one complete Python file with class Model and its Triton kernels.",
    "input_schema": {
        "type": "object",
        "properties": {
            "kernel_source": {"type": "string", "description": "the whole candidate file"},
            "rationale": {"type": "string", "description": "what changed and why, citing the measurements"},
            "tactics": {"type": "array", "items": {"type": "string"}, "description": "tactics applied"},
        },
        "required": ["kernel_source", "rationale", "tactics"],
    },
}
SYSTEM_RULES = (
    "You write Triton GPU kernels that replace a PyTorch reference operator. Output one complete Python file "
    "with `class Model(nn.Module)` taking the reference's __init__ arguments and forward arguments. PyTorch may "
    "only allocate, view and launch: any computation done by PyTorch makes the candidate a fallback that scores 0. "
    "The evaluator checks correctness on seeded and fuzzed shapes against a float64 reference, poisons "
    "uninitialised memory, attributes device time to your kernels and times with CUDA events after an L2 flush. "
    "Aim at the roofline: S = T_SOL / T."
)


@dataclass
class Usage:
    """Tokens and cost so far."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    requests: int = 0
    cost_usd: float = 0.0


def price_of(model: str) -> tuple[float, float]:
    if os.environ.get("AKA_PRICE_IN") and os.environ.get("AKA_PRICE_OUT"):
        return float(os.environ["AKA_PRICE_IN"]), float(os.environ["AKA_PRICE_OUT"])
    for tier, price in PRICES.items():
        if tier in model:
            return price
    return PRICES["sonnet"]


@dataclass
class AnthropicProposer:
    """Proposes candidates with a model; `context` carries the incumbent, measurements, knowledge, errors."""

    problem_brief: str  # reference source, shapes summary, roofline numbers, hardware facts
    model: str = field(default_factory=lambda: os.environ.get("AKA_MODEL", DEFAULT_MODEL))
    client: Any = None
    max_tokens: int = 8000
    usage: Usage = field(default_factory=Usage)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    name: str = "anthropic"
    wants_context: bool = True

    def __post_init__(self) -> None:
        if self.client is None:
            self.client = make_client()

    def tactics(self) -> list[str]:
        return []

    def first(self, context: dict[str, Any] | None = None) -> Proposal:
        return self._ask("Write the first candidate for this problem.", context or {})

    def propose(self, incumbent: dict[str, Any], remembered: list[dict[str, Any]], bottleneck: str | None,
                tactics_in_play: list[str], context: dict[str, Any] | None = None) -> Proposal:
        return self._ask(f"Revise the incumbent. Measured bottleneck: {bottleneck or 'unknown'}.", context or {})

    def _ask(self, instruction: str, context: dict[str, Any]) -> Proposal:
        import anthropic

        dynamic = [instruction]
        for key in ("knowledge", "incumbent_source", "incumbent_measurements", "memory", "last_error"):
            if context.get(key):
                dynamic.append(f"## {key.replace('_', ' ')}\n{context[key]}")
        request = {
            "model": self.model, "max_tokens": self.max_tokens,
            "system": [{"type": "text", "text": SYSTEM_RULES},
                       {"type": "text", "text": self.problem_brief, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "\n\n".join(dynamic)}],
            "tools": [TOOL], "tool_choice": {"type": "tool", "name": TOOL["name"]},
        }
        try:
            response = self.client.messages.create(**request)
        except anthropic.AuthenticationError:
            raise ProposerError("the API key was rejected (invalid or revoked); check ANTHROPIC_API_KEY, or use "
                                "--proposer offline") from None
        except anthropic.APIConnectionError:
            raise ProposerError("cannot reach the Anthropic API (no network?); use --proposer offline") from None
        except anthropic.RateLimitError:
            raise ProposerError("rate limited by the Anthropic API after retries; try again later") from None
        except anthropic.APIStatusError as exc:
            raise ProposerError(f"the Anthropic API answered {exc.status_code}: {str(exc)[:200]}") from None
        except TypeError as exc:  # the SDK's way of saying no credentials were found
            raise ProposerError(f"no API key: set ANTHROPIC_API_KEY or use --proposer offline ({exc})") from None
        self._account(response)
        block = next((b for b in response.content if getattr(b, "type", "") == "tool_use"), None)
        if block is None or not isinstance(block.input, dict) or not block.input.get("kernel_source"):
            raise ProposerError("the model answered without a submit_kernel call carrying kernel_source")
        data = block.input
        self.transcript.append({"request": {k: v for k, v in request.items() if k != "system"},
                                "response": {"id": response.id, "model": response.model,
                                             "stop_reason": response.stop_reason, "tool_input": data}})
        return Proposal(str(data["kernel_source"]), f"anthropic:{response.model}", {}, {},
                        str(data.get("rationale", "")), [str(t) for t in data.get("tactics", [])],
                        f"model {response.model}")

    def _account(self, response: Any) -> None:
        usage = response.usage
        write = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
        read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        self.usage.input_tokens += int(usage.input_tokens)
        self.usage.output_tokens += int(usage.output_tokens)
        self.usage.cache_write_tokens += write
        self.usage.cache_read_tokens += read
        self.usage.requests += 1
        price_in, price_out = price_of(self.model)
        self.usage.cost_usd += (usage.input_tokens * price_in + write * 1.25 * price_in + read * 0.1 * price_in
                                + usage.output_tokens * price_out) / 1e6


def make_client(api_key: str | None = None, http_client: Any = None, max_retries: int = 2,
                timeout_s: float = 120.0) -> Any:
    """An SDK client; the key comes from the argument or ANTHROPIC_API_KEY and is never written anywhere."""
    try:
        import anthropic
    except ImportError:
        raise ProposerError("the anthropic package is not installed; run scripts/setup.sh") from None
    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ProposerError("no API key: set ANTHROPIC_API_KEY (or use --proposer offline)")
    return anthropic.Anthropic(api_key=key, max_retries=max_retries, timeout=anthropic.Timeout(timeout_s, connect=5.0),
                               http_client=http_client)
