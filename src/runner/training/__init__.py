"""Training a local hallucination detector: the token recipe (LettuceDetect's) and the
sentence recipe, their data splits, the kept checkpoint, the card and the promotion rule.

Why a package apart from `runner.verifiers`: scoring with a model is what every study
does; training one is what `train_detector` does. Training builds on the verifiers' input
rule, encoding and span labels (so a detector is trained on exactly the inputs it will be
scored on) and writes the card they read; nothing in `runner.verifiers` imports from here.
"""

from runner.training.detector_config import (
    DetectorConf,
    TrainConf,
    backbone_folder,
    check_training_plan,
)
from runner.training.detector_training import (
    check_training_folder,
    choose_threshold,
    label_segments,
    predict_token_probs,
    resolve_device,
    train,
)
from runner.training.promotion import (
    CANDIDATE_ALIAS,
    Promotion,
    alias_version,
    answer_length_ap,
    champion_on,
    choose_alias,
    existing_version,
    promote,
    rows_fingerprint,
    verifier_ap,
)
from runner.training.recipes import RecipeJob, Trained, labelled_pairs, train_recipe
from runner.training.sentence_training import (
    pair_metrics,
    pair_tensors,
    predict_pair_probs,
    train_sentences,
)
from runner.training.training_record import add_training_cells, detector_card
from runner.training.training_rows import (
    by_task,
    check_training_data,
    grouped_split,
    plan_key,
    plan_settings,
    sample_rows,
)

__all__ = [
    "CANDIDATE_ALIAS",
    "DetectorConf",
    "Promotion",
    "RecipeJob",
    "TrainConf",
    "Trained",
    "add_training_cells",
    "alias_version",
    "answer_length_ap",
    "backbone_folder",
    "by_task",
    "champion_on",
    "check_training_data",
    "check_training_folder",
    "check_training_plan",
    "choose_alias",
    "choose_threshold",
    "detector_card",
    "existing_version",
    "grouped_split",
    "label_segments",
    "labelled_pairs",
    "pair_metrics",
    "pair_tensors",
    "plan_key",
    "plan_settings",
    "predict_pair_probs",
    "predict_token_probs",
    "promote",
    "resolve_device",
    "rows_fingerprint",
    "sample_rows",
    "train",
    "train_recipe",
    "train_sentences",
    "verifier_ap",
]
