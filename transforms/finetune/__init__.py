"""The `autoais finetune` command's own modules (not a Beam pipeline: one
process trains one model; the layers are kept all the same).

    data          the splits of training-data outputs, checked and digested
    trainable     the model while it trains: the base loaded for its family,
                  a batch's loss, the scorer's scores, checkpoints, saving
    training      the training loop: batches, validation, calibration, the
                  best checkpoint, checkpoints to resume from, progress
    card          MODEL_CARD.md and model_card.json
"""
