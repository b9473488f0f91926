"""Question jitter for word problems whose worked solutions carry calculator
annotations (GSM8K's ``<<16-3-4=9>>``): the annotations are read as a program over the
numbers of the question, so new numbers can be put in the question and the answer
re-solved, the way BOAT's math question jitter needs.

A program is kept only when every operand of every step is accounted for: a number
written in the question (its "slot"), an earlier step's result, or a constant that the
question spells out or that units supply (2, 12, 60, 100, ...), and when its last step
gives the final answer. Only slots whose value cannot be mistaken for such a constant or
for an earlier result are jittered; the rest keep their value. Arithmetic is exact
(``Fraction``), and a jitter whose steps stop being whole numbers where the original's
were is redrawn."""

from __future__ import annotations

import ast
import operator
import random
import re
from dataclasses import dataclass
from fractions import Fraction

_ANNOTATION = re.compile(r"<<([^=<>]+)=([^<>]+)>>")
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\d,]*\d)|(?<![\w.,])\d+(?:\.\d+)?")
_WORDS = {"half": Fraction(1, 2), "twice": 2, "double": 2, "triple": 3, "quarter": Fraction(1, 4),
          "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
          "ten": 10, "eleven": 11, "twelve": 12, "dozen": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
          "hundred": 100, "thousand": 1000}
# unit constants a solution may use without the question writing them
UNITS = frozenset(Fraction(v) for v in (1, 2, 3, 4, 5, 7, 10, 12, 24, 30, 52, 60, 100, 365, 1000))
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


class NotAProgram(ValueError):
    """The solution cannot be read as a program over the question's numbers."""


def _fraction(text: str) -> Fraction:
    return Fraction(text.replace(",", "").strip().rstrip("."))


def _operands(expr: str) -> tuple[ast.Expression, list[Fraction]]:
    """The parsed expression (+, -, *, / and parentheses over numbers only) and its
    numbers in order."""
    try:
        tree = ast.parse(expr.replace(",", "").replace("x", "*").strip(), mode="eval")
    except SyntaxError:
        raise NotAProgram(f"not arithmetic: {expr!r}") from None
    numbers = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            numbers.append(Fraction(str(node.value)))
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.UAdd,
                                   *_OPS)):
            raise NotAProgram(f"not plain arithmetic: {expr!r}")
    return tree, numbers


def _compute(node: ast.AST, values: list[Fraction]) -> Fraction:
    """The value of ``node`` with its constants, in ``ast.walk`` order, replaced by ``values``."""
    order = {id(n): k for k, n in enumerate(n for n in ast.walk(node) if isinstance(n, ast.Constant))}

    def run(n: ast.AST) -> Fraction:
        if isinstance(n, ast.Expression):
            return run(n.body)
        if isinstance(n, ast.Constant):
            return values[order[id(n)]]
        if isinstance(n, ast.UnaryOp):
            return -run(n.operand) if isinstance(n.op, ast.USub) else run(n.operand)
        if isinstance(n, ast.BinOp):
            left, right = run(n.left), run(n.right)
            if isinstance(n.op, ast.Div) and right == 0:
                raise ZeroDivisionError
            return _OPS[type(n.op)](left, right)
        raise NotAProgram(f"unexpected {type(n).__name__}")
    return run(node)


@dataclass(frozen=True)
class Program:
    """A question split around its number slots, and the solution's steps: each an
    expression whose operands are references ``("slot", i)``, ``("step", j)`` or
    ``("const", value)``."""

    parts: tuple[str, ...]  # len(slots) + 1 pieces of text around the slots
    slots: tuple[Fraction, ...]
    texts: tuple[str, ...]  # each slot as the question writes it
    jitterable: tuple[bool, ...]
    steps: tuple[tuple[str, tuple[tuple[str, object], ...]], ...]  # (expression, operand refs)
    integral: tuple[bool, ...]  # which step results were whole numbers

    def solve(self, slots: tuple[Fraction, ...]) -> list[Fraction]:
        """Every step's result with these slot values."""
        results: list[Fraction] = []
        for expr, refs in self.steps:
            tree, _ = _operands(expr)
            values = [slots[r] if kind == "slot" else results[r] if kind == "step" else Fraction(r)
                      for kind, r in refs]
            results.append(_compute(tree, values))
        return results

    @property
    def answer(self) -> Fraction:
        return self.solve(self.slots)[-1]

    def question(self, slots: tuple[Fraction, ...]) -> str:
        text = []
        for k, part in enumerate(self.parts[:-1]):
            value, written = slots[k], self.texts[k]
            shown = written if value == self.slots[k] else f"{int(value):,}" if "," in written else str(int(value))
            text += [part, shown]
        return "".join(text + [self.parts[-1]])

    def jitter(self, rng: random.Random, tries: int = 20) -> tuple[str, int] | None:
        """(the question with new numbers, its re-solved whole answer), or None when no
        jitter within ``tries`` keeps every originally whole step whole and positive."""
        if not any(self.jitterable):
            return None
        for _ in range(tries):
            slots = tuple(_nudge(v, rng) if j else v for v, j in zip(self.slots, self.jitterable))
            if slots == self.slots:
                continue
            try:
                results = self.solve(slots)
            except ZeroDivisionError:
                continue
            if all((r.denominator == 1 and r > 0) or not whole for r, whole in zip(results, self.integral)) \
                    and results[-1].denominator == 1 and results[-1] > 0:
                return self.question(slots), int(results[-1])
        return None


def _nudge(value: Fraction, rng: random.Random) -> Fraction:
    """A nearby whole number on the scale of its trailing zeros (80,000 moves by
    thousands, 150 by tens, 16 by ones), never below 1."""
    n, step = int(value), 1
    while n % (step * 10) == 0 and n >= step * 100:
        step *= 10
    return Fraction(max(1, n + rng.choice([-3, -2, -1, 1, 2, 3]) * step))


def _constant(x: Fraction, spelt: set[Fraction]) -> bool:
    """A unit constant or a number the question spells out, or its reciprocal (0.5, .01)."""
    return x in UNITS or x in spelt or (x != 0 and (1 / x in UNITS or 1 / x in spelt))


def parse_program(question: str, solution: str) -> Program:
    """The program of a GSM8K solution over its question's numbers (``NotAProgram`` with
    the reason when it cannot be read as one)."""
    final = re.search(r"####\s*(-?[\d,]+(?:\.\d+)?)\s*$", solution.strip())
    steps_text = _ANNOTATION.findall(solution)
    if final is None or not steps_text:
        raise NotAProgram("no annotated steps or no final answer")
    matches = list(_NUMBER.finditer(question))
    slots = tuple(_fraction(m.group()) for m in matches)
    spelt = {Fraction(v) for w, v in _WORDS.items() if re.search(rf"\b{w}\b", question, re.IGNORECASE)}
    steps, results, frozen = [], [], []
    for expr, stated in steps_text:
        tree, numbers = _operands(expr)
        refs = []
        for x in numbers:
            if x in results:  # an earlier result first: the solution's own chain
                step = len(results) - 1 - results[::-1].index(x)
                if results.count(x) > 1 or x in slots or _constant(x, spelt):
                    frozen.append(step)  # read more than one way: its inputs keep their values
                refs.append(("step", step))
            elif x in slots:
                refs.append(("slot", slots.index(x)))
            elif _constant(x, spelt):
                refs.append(("const", x))
            else:
                raise NotAProgram(f"operand {x} of {expr!r} is neither in the question nor an earlier step")
        value = _compute(tree, numbers)
        try:
            said = _fraction(stated)
        except (ValueError, ZeroDivisionError):
            raise NotAProgram(f"unreadable result {stated!r}") from None
        if value != said:
            raise NotAProgram(f"{expr} = {value}, the solution says {stated}")
        steps.append((expr, tuple(refs)))
        results.append(value)
    if results[-1] != _fraction(final.group(1)):
        raise NotAProgram("the last annotated step is not the final answer")
    inputs: list[set[int]] = []  # the slots each step's result depends on
    for _, refs in steps:
        inputs.append({r for kind, r in refs if kind == "slot"}
                      | {k for kind, r in refs if kind == "step" for k in inputs[r]})
    used = set().union(*inputs)
    fixed = set().union(*(inputs[j] for j in frozen))
    # a slot is jittered when the steps use it, it is whole, its value cannot also be read
    # as a unit constant, a spelt-out number, an earlier result or another slot, and no
    # ambiguously read result depends on it (so every reading gives the same answer)
    jitterable = tuple(k in used and k not in fixed and v.denominator == 1 and v not in UNITS and v not in spelt
                       and v not in results and slots.count(v) == 1 for k, v in enumerate(slots))
    parts = []
    last = 0
    for m in matches:
        parts.append(question[last:m.start()])
        last = m.end()
    parts.append(question[last:])
    return Program(tuple(parts), slots, tuple(m.group() for m in matches), jitterable,
                   tuple(steps), tuple(r.denominator == 1 for r in results))
