"""Writes the checkpoint fixtures of agent/checkpoints/testdata with the real frameworks.

Run with the framework tier's virtualenv (see tests/_frameworks.ts), from this folder:
    ~/.cache/gpuctl-frameworks/venv/bin/python make_fixtures.py
Every model is tiny, so each file stays a few KB.
"""
import os
import shutil
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)


def plain_torch():
    model = torch.nn.Linear(4, 2)
    torch.save({"step": 150, "epoch": 3, "model": model.state_dict()}, os.path.join(HERE, "torch_dict.pt"))
    torch.save(model.state_dict(), os.path.join(HERE, "torch_state_dict.pt"))
    torch.save(model.state_dict(), os.path.join(HERE, "torch_legacy.pt"), _use_new_zipfile_serialization=False)
    save_file(model.state_dict(), os.path.join(HERE, "model.safetensors"))


def lightning():
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, _):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.layer(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.TensorDataset(torch.randn(28, 4), torch.randn(28, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    out = tempfile.mkdtemp()
    ckpt = ModelCheckpoint(dirpath=out, save_last=True, save_top_k=-1, every_n_epochs=1)
    trainer = L.Trainer(max_epochs=3, callbacks=[ckpt], logger=False, enable_progress_bar=False,
                        enable_model_summary=False, default_root_dir=out)
    trainer.fit(Tiny(), loader)
    shutil.copy(os.path.join(out, "last.ckpt"), os.path.join(HERE, "lightning_last.ckpt"))
    shutil.copy(os.path.join(out, "epoch=2-step=21.ckpt"), os.path.join(HERE, "epoch=2-step=21.ckpt"))
    shutil.rmtree(out)


def keras_files():
    import keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    model.save(os.path.join(HERE, "model-03.keras"))
    model.save_weights(os.path.join(HERE, "model.weights.h5"))
    model.save(os.path.join(HERE, "model.h5"))


plain_torch()
lightning()
keras_files()
