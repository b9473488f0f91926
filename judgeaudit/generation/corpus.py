"""Template corpus for the embedded default: instructions across categories, with
answers whose facts the pipeline knows, written in distinct house styles.

Every item carries its reference fact, so later audits can tell a correct answer
from a degraded one (``degrade``) without any human labels.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from judgeaudit.vocabulary import CATEGORIES, SUBJECTIVE

CAPITALS = {
    "France": "Paris", "Spain": "Madrid", "Italy": "Rome", "Germany": "Berlin",
    "Japan": "Tokyo", "Egypt": "Cairo", "Kenya": "Nairobi", "Peru": "Lima",
    "Chile": "Santiago", "Canada": "Ottawa", "Norway": "Oslo", "Sweden": "Stockholm",
    "Greece": "Athens", "Poland": "Warsaw", "Austria": "Vienna", "Ireland": "Dublin",
    "Portugal": "Lisbon", "Cuba": "Havana", "India": "Delhi", "China": "Beijing",
    "Russia": "Moscow", "Turkey": "Ankara", "Iran": "Tehran", "Mexico": "Mexico City",
}
ANTONYMS = {
    "hot": "cold", "big": "small", "fast": "slow", "happy": "sad", "light": "dark",
    "early": "late", "strong": "weak", "open": "closed", "rich": "poor", "high": "low",
    "hard": "soft", "old": "new", "wet": "dry", "loud": "quiet", "full": "empty",
    "thick": "thin", "clean": "dirty", "near": "far", "long": "short", "brave": "afraid",
}
COLOURS = {
    "the sky on a clear day": "blue", "fresh grass": "green", "a ripe banana": "yellow",
    "snow": "white", "coal": "black", "a ripe tomato": "red", "an orange": "orange",
    "a plum": "purple", "a lemon": "yellow", "milk": "white", "a crow": "black",
    "a pumpkin": "orange", "blood": "red", "a lime": "green", "the sea": "blue",
}
UNITS = [("minutes", "hours", 60), ("seconds", "minutes", 60), ("hours", "days", 24),
         ("days", "weeks", 7), ("months", "years", 12), ("centimetres", "metres", 100)]
ANIMALS = {
    "dog": "bark", "cat": "meow", "cow": "moo", "duck": "quack", "sheep": "baa",
    "lion": "roar", "owl": "hoot", "horse": "neigh", "pig": "oink", "snake": "hiss",
}

SCENES = ("the ocean", "a forest at dawn", "a city at night", "a winter morning", "an old library",
          "a summer storm", "a quiet village", "a busy market", "a mountain lake", "a desert road")
MOODS = ("calm", "vast", "quiet", "bright", "lively", "gentle", "wild", "peaceful", "cosy", "dramatic")
PETS = ("puppy", "kitten", "parrot", "goldfish", "rabbit", "hamster", "pony", "turtle")
NAMES = ("Biscuit", "Luna", "Pepper", "Milo", "Clover", "Ziggy", "Maple", "Otis", "Pixel", "Juniper")
PICKS = {"season": ("spring", "summer", "autumn", "winter"),
         "hobby": ("reading", "painting", "hiking", "cooking", "chess", "gardening"),
         "drink": ("tea", "coffee", "cocoa", "lemonade", "juice")}



@dataclass(frozen=True)
class Item:
    """One instruction with the fact its answer must state."""

    prompt_id: str
    category: str
    prompt: str
    fact: str  # the short correct answer, e.g. "Paris"
    explanation: str  # one sentence that justifies the fact


def _arithmetic(rng: random.Random) -> tuple[str, str, str]:
    a, b = rng.randint(2, 49), rng.randint(2, 49)
    if rng.random() < 0.5:
        q = rng.choice(["What is {a} plus {b}?", "Add {a} and {b}.", "Compute {a} + {b}."])
        return q.format(a=a, b=b), str(a + b), f"{a} plus {b} equals {a + b}"
    a, b = max(a, b), min(a, b)
    q = rng.choice(["What is {a} minus {b}?", "Subtract {b} from {a}.", "Compute {a} - {b}."])
    return q.format(a=a, b=b), str(a - b), f"{a} minus {b} equals {a - b}"


def _capital(rng: random.Random) -> tuple[str, str, str]:
    c = rng.choice(sorted(CAPITALS))
    q = rng.choice(["What is the capital of {c}?", "Name the capital city of {c}.",
                    "Which city is the capital of {c}?"])
    return q.format(c=c), CAPITALS[c], f"the capital of {c} is {CAPITALS[c]}"


def _antonym(rng: random.Random) -> tuple[str, str, str]:
    w = rng.choice(sorted(ANTONYMS))
    q = rng.choice(["What is the opposite of '{w}'?", "Give an antonym of the word '{w}'.",
                    "Which word means the opposite of '{w}'?"])
    return q.format(w=w), ANTONYMS[w], f"the opposite of {w} is {ANTONYMS[w]}"


def _colour(rng: random.Random) -> tuple[str, str, str]:
    t = rng.choice(sorted(COLOURS))
    q = rng.choice(["What colour is {t}?", "Tell me the colour of {t}."])
    return q.format(t=t), COLOURS[t], f"{t} is {COLOURS[t]}"


def _units(rng: random.Random) -> tuple[str, str, str]:
    small, big, k = rng.choice(UNITS)
    n = rng.randint(2, 9)
    q = rng.choice(["How many {s} are in {n} {b}?", "Convert {n} {b} to {s}."])
    return q.format(s=small, n=n, b=big), str(n * k), f"{n} {big} make {n * k} {small}"


def _compare(rng: random.Random) -> tuple[str, str, str]:
    a, b = rng.sample(range(10, 999), 2)
    q = rng.choice(["Which is larger, {a} or {b}?", "Which number is bigger: {a} or {b}?"])
    hi = max(a, b)
    return q.format(a=a, b=b), str(hi), f"{hi} is larger than {min(a, b)}"


def _animal(rng: random.Random) -> tuple[str, str, str]:
    a = rng.choice(sorted(ANIMALS))
    q = rng.choice(["What sound does a {a} make?", "Which noise does a {a} make?"])
    return q.format(a=a), ANIMALS[a], f"a {a} says {ANIMALS[a]}"


def _describe(rng: random.Random) -> tuple[str, str, str]:
    scene, mood = rng.choice(SCENES), rng.choice(MOODS)
    q = rng.choice(["Describe {s} in a few words.", "How would you describe {s}?"])
    return q.format(s=scene), mood, f"{scene} feels {mood}"


def _suggest(rng: random.Random) -> tuple[str, str, str]:
    pet, name = rng.choice(PETS), rng.choice(NAMES)
    q = rng.choice(["Suggest a name for a new {p}.", "What would you call a {p}?"])
    return q.format(p=pet), name, f"{name} would suit a {pet}"


def _opinion(rng: random.Random) -> tuple[str, str, str]:
    topic = rng.choice(sorted(PICKS))
    choice = rng.choice(PICKS[topic])
    q = rng.choice(["Which {t} do you like best?", "What is your favourite {t}?"])
    return q.format(t=topic), choice, f"{choice} is a fine {topic}"


def task_type(category: str) -> str:
    """objective (a checkable answer), subjective (open, free in style), or other (user prompts)."""
    return "objective" if category in CATEGORIES else "subjective" if category in SUBJECTIVE else "other"


_MAKERS = {"describe": _describe, "suggest": _suggest, "opinion": _opinion, "arithmetic": _arithmetic, "capital": _capital, "antonym": _antonym,
           "colour": _colour, "units": _units, "compare": _compare, "animal": _animal}


def make_items(n: int, seed: int, prefix: str = "p",
               categories: tuple[str, ...] = CATEGORIES) -> list[Item]:
    """``n`` instructions, categories round-robin, reproducible from ``seed``."""
    unknown = set(categories) - set(_MAKERS)
    if unknown:
        raise ValueError(f"unknown prompt categories {sorted(unknown)}; known: {sorted(_MAKERS)}")
    rng = random.Random(seed)
    items = []
    for k in range(n):
        cat = categories[k % len(categories)]
        prompt, fact, why = _MAKERS[cat](rng)
        items.append(Item(f"{prefix}{k:05d}", cat, prompt, fact, why))
    return items


def degrade(item: Item, rng: random.Random) -> str:
    """A plausible wrong fact for ``item`` (for known-quality negatives; objective items only:
    a subjective one has no wrong answer)."""
    if item.category in SUBJECTIVE:
        raise ValueError(f"{item.prompt_id}: a {item.category!r} item has no wrong answer to degrade to")
    pools = {"capital": list(CAPITALS.values()), "antonym": list(ANTONYMS.values()),
             "colour": sorted(set(COLOURS.values())), "animal": list(ANIMALS.values())}
    if item.category in pools:
        return rng.choice([x for x in pools[item.category] if x != item.fact])
    return str(int(item.fact) + rng.choice([-3, -2, -1, 1, 2, 3]))
