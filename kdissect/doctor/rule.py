"""Rules as data: each finding id with its severity, its words, and its thresholds, so that `--explain ID` and
`--set ID.threshold=VALUE` work for every rule the same way."""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.doctor.finding import Evidence, Finding, Severity


@dataclass(frozen=True, slots=True)
class Threshold:
    name: str
    default: float
    unit: str
    meaning: str


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: Severity
    summary: str
    """What the rule looks for, in one line."""
    explanation: str
    advice: str
    """What to do; `{setting}` names (views of `doctor.dialects.SETTINGS`) are worded for the client's library."""
    thresholds: tuple[Threshold, ...]
    expected: bool = False
    """An info rule that says why the exchanges it claims look wrong but are not (a first join's MEMBER_ID_REQUIRED,
    a client closing during its long poll): they are accounted for without a warning."""

    def finding(self, title: str, evidence: Evidence, severity: Severity | None = None) -> Finding:
        """A finding of this rule; `severity` where the evidence decides the impact (a rule's own is the most)."""
        return Finding(self.id, severity or self.severity, title, self.explanation, self.advice, evidence)


class SettingError(ValueError):
    """A `--set` the rules do not know, or a value that is not a number."""


class Settings:
    """Every rule's thresholds: the defaults, changed by `ID.threshold=VALUE` settings."""

    def __init__(self, rules: dict[str, Rule], changes: list[str] | tuple[str, ...] = ()) -> None:
        self._values = {(rule.id, t.name): t.default for rule in rules.values() for t in rule.thresholds}
        for change in changes:
            target, equals, text = change.partition("=")
            rule_id, _, name = target.rpartition(".")
            if not equals or not rule_id:
                raise SettingError(f"--set {change}: say ID.NAME=VALUE, such as consumer.lag.threshold=1000")
            if rule_id not in rules:
                raise SettingError(f"--set {change}: no finding '{rule_id}' (kdissect doctor --rules lists them)")
            if (rule_id, name) not in self._values:
                known = ", ".join(t.name for t in rules[rule_id].thresholds)
                raise SettingError(f"--set {change}: {rule_id} has no threshold '{name}' (it has: {known})")
            try:
                value = float(text)
            except ValueError:
                raise SettingError(f"--set {change}: give a number after '='") from None
            if value < 0:
                raise SettingError(f"--set {change}: thresholds are not negative")
            self._values[(rule_id, name)] = value

    def __call__(self, rule: Rule, name: str) -> float:
        return self._values[(rule.id, name)]
