"""Training with trl's trainers: pre-training, SFT, DPO, reward models and the students."""
