"""The model card `autoais finetune` writes beside the weights: model_card.json
(what the scorers read: `threshold`) and MODEL_CARD.md, its text for people.
"""
import json
from typing import Dict

CARD_JSON = "model_card.json"
CARD_MARKDOWN = "MODEL_CARD.md"
CARD_FORMAT = "autoais-model-card/1"


def _percent(value) -> str:
  return "" if value is None else f"{100 * value:.1f}"


def card_markdown(card: Dict) -> str:
  validation = card["validation"]
  base = card["base"]
  lines = [
      f"# Attribution detector ({card['family']})", "",
      f"Fine-tuned by `autoais finetune` from `{base['path']}`"
      + (f" (revision {base['revision']})" if base.get("revision") else "")
      + f", weights sha256 {base['weights_sha256'][:16]}....",
      "", f"Load it as any checkpoint: `--scorer {card['family']} --model DIR`; the "
      f"scorers decide at this card's threshold, {card['threshold']:.6g}, unless "
      "--threshold is given.", "",
      f"Threshold: the one that maximises {card['calibration']['metric']} on the "
      f"validation split ({card['calibration']['candidates']} candidate cuts; ties "
      "nearest 0.5), as `autoais agreement --calibrate_on` chooses it. The "
      "validation figures below are at that threshold, on the split it was tuned "
      "on: the test split is the held-out measure.", "",
      "| validation | n | accuracy | balanced accuracy | Cohen's kappa | ROC-AUC |",
      "|---|---:|---:|---:|---:|---:|",
      f"| this model (step {card['steps']['best']}) | {validation['n_rated']} | "
      f"{_percent(validation['accuracy'])} | {_percent(validation['balanced_accuracy'])} "
      f"| {validation['cohen_kappa']:.3f} | {validation['roc_auc']:.3f} |",
      f"| the base (step 0) | {card['base_validation']['n_rated']} | "
      f"{_percent(card['base_validation']['accuracy'])} | "
      f"{_percent(card['base_validation']['balanced_accuracy'])} | "
      f"{card['base_validation']['cohen_kappa']:.3f} | "
      f"{card['base_validation']['roc_auc']:.3f} |", "",
      "| split | examples | positive | negative |", "|---|---:|---:|---:|"]
  for split, sizes in card["split_sizes"].items():
    lines.append(f"| {split} | {sizes['examples']} | {sizes['positive']} | "
                 f"{sizes['negative']} |")
  settings = card["settings"]
  lines += ["", f"Training: {card['steps']['total']} steps ({settings['epochs']} epochs "
            f"of {card['steps']['per_epoch']}, batch {settings['batch_size']}), "
            f"learning rate {settings['learning_rate']}, "
            + (f"LoRA rank {settings['lora_rank']} merged into the weights"
               if settings["lora_rank"] else "full fine-tuning")
            + f", seed {card['seed']}, {settings['device']}, "
            f"{card['wall_seconds']:.0f} s.", "",
            "Data (sha256 of each file read):", ""]
  for entry in card["training_data"]:
    lines.append(f"* `{entry['directory']}`" + (f" ({entry['task_name']})"
                                               if entry.get("task_name") else ""))
    for name, described in entry["files"].items():
      lines.append(f"  * {name}: {described['sha256']}")
  lines += ["", "| step | train loss | validation balanced accuracy | threshold |",
            "|---:|---:|---:|---:|"]
  for entry in card["validation_history"]:
    loss = "" if entry["train_loss"] is None else f"{entry['train_loss']:.4f}"
    lines.append(f"| {entry['step']} | {loss} | {_percent(entry['balanced_accuracy'])} "
                 f"| {entry['threshold']:.6g} |")
  return "\n".join(lines) + "\n"


def card_json(card: Dict) -> str:
  return json.dumps(dict(format=CARD_FORMAT, **card), indent=2, ensure_ascii=False) + "\n"
