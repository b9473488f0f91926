"""The settings: params.yaml (or an overlay of it) parsed and checked, every knob of every
stage, with errors that name the file, the line and the field. The lowest layer of the
library: it imports only leaves (vocabulary, templates, model specs, dispatch, precision).

- ``fields``: what every section shares (strict models, template checks, training arguments)
- ``synthetic``: the embedded pipeline's sections (corpus, models, generation, training, judges)
- ``audits``: the audits' sections; ``recorded``: recorded verdicts' and leaderboards'
- ``params``: the whole ``Params`` and its cross-checks; ``loader``: ``load_params``"""

from judgeaudit.config.audits import (HHRLHF, PU, Attacks, Audit, Boat, BoatProbe, BoatReal, LeakageStudies,
                                      Mitigation, Prefix, PUEncoder, Recognition, ScoreJudge, ScoreRange,
                                      SummEvalSource)
from judgeaudit.config.fields import Strict, TrainArgs, check_template, placeholders
from judgeaudit.config.live import LiveData, LiveJudge
from judgeaudit.config.loader import load_params
from judgeaudit.config.params import Params, Scale
from judgeaudit.config.recorded import (JudgeBoard, LeaderboardSection, RealJudges, RealJudgesAltTest,
                                        RealJudgesPU, RealJudgesSelective, SelfPreferenceSection)
from judgeaudit.config.synthetic import (Build, Corpus, Embedded, Generate, Judge, JudgeMode, JudgeTiers,
                                         Leakage, ModelEntry, Size, Train)
from judgeaudit.params_file import ConfigError
from judgeaudit.templates import COT_TEMPLATE, PARAPHRASE_TEMPLATE, RECOGNITION_TEMPLATE
from judgeaudit.vocabulary import METHODS, TIERS

__all__ = [
    "COT_TEMPLATE", "HHRLHF", "METHODS", "PARAPHRASE_TEMPLATE", "PU", "RECOGNITION_TEMPLATE", "TIERS",
    "Attacks", "Audit", "Boat", "BoatProbe", "BoatReal", "Build", "ConfigError", "Corpus", "Embedded",
    "Generate", "Judge", "JudgeBoard", "JudgeMode", "JudgeTiers", "Leakage", "LeakageStudies",
    "LeaderboardSection", "LiveData", "LiveJudge", "Mitigation", "ModelEntry", "PUEncoder", "Params", "Prefix", "RealJudges",
    "RealJudgesAltTest", "RealJudgesPU", "RealJudgesSelective", "Recognition", "Scale", "ScoreJudge",
    "ScoreRange", "SelfPreferenceSection", "Size", "Strict", "SummEvalSource", "Train", "TrainArgs",
    "check_template", "load_params", "placeholders",
]
