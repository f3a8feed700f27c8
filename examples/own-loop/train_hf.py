"""A Hugging Face Trainer script as users write it: a tiny BERT made from
its config (no download), a map-style dataset of token ids, and
Trainer.train on the CPU. The Trainer makes the training DataLoader itself
and Accelerate wraps it (DataLoaderShard, a DataLoader subclass that
fetches one batch ahead). The data are synthetic: __getitem__ makes the
ids from the index and sleeps --getitem-ms to stand for tokenising.
Nothing in it knows about headspace.

    python train_hf.py [--epochs 3] [--workers 0] [--getitem-ms 4]
"""
import argparse
import os
import tempfile
import time

import torch
from torch.utils.data import Dataset

# transformers would import TensorFlow where it is installed (the peers'
# environment has it for tf.data) and refuse its Keras 3: PyTorch only.
os.environ.setdefault("USE_TF", "0")
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Tokens(Dataset):
    def __init__(self, n, ms, seq=32, vocab=512):
        self.n, self.ms, self.seq, self.vocab = n, ms, seq, vocab

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.ms / 1000)
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(1, self.vocab, (self.seq,), generator=g)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": torch.tensor(i % 2)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=512)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--getitem-ms", type=float, default=4)
    a = p.parse_args()
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, num_labels=2)
    model = BertForSequenceClassification(cfg)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=os.path.join(out, "run"), num_train_epochs=a.epochs,
                                 per_device_train_batch_size=a.batch, dataloader_num_workers=a.workers,
                                 learning_rate=1e-3, use_cpu=True, report_to=[], save_strategy="no",
                                 logging_strategy="no", disable_tqdm=True)
        Trainer(model=model, args=args, train_dataset=Tokens(a.samples, a.getitem_ms)).train()


if __name__ == "__main__":
    main()
