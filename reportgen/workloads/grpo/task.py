"""The synthetic task of the embedded GRPO workload: tokenizer, prompts and verifier reward.

Task "max": the prompt lists 2-5 digits, the answer is the largest one, written inside
answer tags. The prompt ends with the opening `<answer>` tag (as a chat template ends with the
assistant turn), so the policy must write `DIGITS </answer>` and stop.

Reward, in the spirit of Relax's openr1mm verifier: the text between the first `<answer>` and
`</answer>` is parsed as a number; no closing tag or a non-number inside is malformed (0.0);
the right number is 1.0; a well-formed wrong number earns a small format credit (0.1), which
gives a random-init model a gradient towards the format before it can be right.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SPECIALS = ("<pad>", "<bos>", "<eos>", "<answer>", "</answer>", "max")
DIGITS = tuple(str(d) for d in range(10))
VOCAB: tuple[str, ...] = SPECIALS + DIGITS
VOCAB_SIZE = len(VOCAB)
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}
PAD_ID = TOKEN_ID["<pad>"]
BOS_ID = TOKEN_ID["<bos>"]
EOS_ID = TOKEN_ID["<eos>"]
OPEN_ID = TOKEN_ID["<answer>"]
CLOSE_ID = TOKEN_ID["</answer>"]
NEVER_SAMPLED = (PAD_ID, BOS_ID)

FORMAT_CREDIT = 0.1
MIN_DIGITS, MAX_DIGITS = 2, 5
PROMPT_OVERHEAD = 3  # <bos> max ... <answer>
DATASET_SIZE = 4096


def encode(text: str) -> list[int]:
    """Whitespace tokenizer over the fixed vocabulary; unknown words raise ValueError."""
    try:
        return [TOKEN_ID[w] for w in text.split()]
    except KeyError as exc:
        raise ValueError(f"token {exc.args[0]!r} is not in the workload vocabulary") from None


def decode(ids: list[int]) -> str:
    return " ".join(VOCAB[i] for i in ids)


@dataclass(frozen=True)
class Prompt:
    index: int
    digits: tuple[int, ...]

    @property
    def answer(self) -> int:
        return max(self.digits)

    @property
    def token_ids(self) -> list[int]:
        return [BOS_ID, TOKEN_ID["max"], *(TOKEN_ID[str(d)] for d in self.digits), OPEN_ID]


def make_dataset(rollout_seed: int, max_prompt_len: int, size: int = DATASET_SIZE) -> list[Prompt]:
    """A fixed pool of prompts, a pure function of the seed and the prompt-length limit."""
    most = min(MAX_DIGITS, max_prompt_len - PROMPT_OVERHEAD)
    if most < MIN_DIGITS:
        raise ValueError(
            f"max prompt length {max_prompt_len} is below the shortest prompt ({MIN_DIGITS + PROMPT_OVERHEAD} tokens)"
        )
    rng = random.Random(rollout_seed)
    return [Prompt(i, draw_digits(rng, most)) for i in range(size)]


def draw_digits(rng: random.Random, most: int) -> tuple[int, ...]:
    """One prompt's digits: MIN_DIGITS to `most` of them, whose largest is uniform over 0-9 (the
    others uniform up to it, the largest at a uniform place). With uniform digits the largest is 6-9
    in 64-92 % of prompts, and GRPO learnt "answer a high digit" instead of the largest: right on
    those prompts, wrong on the others, and a step's reward said more about its prompts than about
    the policy."""
    k = rng.randint(MIN_DIGITS, most)
    top = rng.randrange(10)
    digits = [rng.randint(0, top) for _ in range(k)]
    digits[rng.randrange(k)] = top
    return tuple(digits)


class PromptStream:
    """Yields batches in a shuffled order; epoch e is shuffled with `rollout_seed + e`, as Relax does."""

    def __init__(self, dataset: list[Prompt], rollout_seed: int) -> None:
        self._data = dataset
        self._seed = rollout_seed
        self._epoch = 0
        self._order = self._shuffle(0)
        self._pos = 0

    def _shuffle(self, epoch: int) -> list[int]:
        order = list(range(len(self._data)))
        random.Random(self._seed + epoch).shuffle(order)
        return order

    def state(self) -> dict[str, int]:
        """Where the stream is (a checkpoint keeps it: a resumed run draws the prompts it would have)."""
        return {"epoch": self._epoch, "pos": self._pos}

    def restore(self, state: dict[str, int]) -> None:
        self._epoch = int(state["epoch"])
        self._order = self._shuffle(self._epoch)
        self._pos = int(state["pos"])

    def next_batch(self, n: int) -> list[Prompt]:
        out: list[Prompt] = []
        while len(out) < n:
            if self._pos == len(self._order):
                self._epoch += 1
                self._order = self._shuffle(self._epoch)
                self._pos = 0
            out.append(self._data[self._order[self._pos]])
            self._pos += 1
        return out


@dataclass(frozen=True)
class Grade:
    reward: float
    well_formed: bool
    correct: bool


def score(response_ids: list[int], answer: int) -> Grade:
    """Rule-based verifier: parse the answer span of a response (EOS and padding removed)."""
    if CLOSE_ID not in response_ids:
        return Grade(0.0, False, False)
    span = response_ids[: response_ids.index(CLOSE_ID)]
    if not span or any(VOCAB[i] not in DIGITS for i in span):
        return Grade(0.0, False, False)
    value = int("".join(VOCAB[i] for i in span))
    if value == answer:
        return Grade(1.0, True, True)
    return Grade(FORMAT_CREDIT, True, False)
