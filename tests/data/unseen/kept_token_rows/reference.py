import torch
import torch.nn as nn


class Model(nn.Module):
    """The hidden rows of the tokens `keep` selects, in token order, each scaled by its gate."""

    def forward(self, hidden, keep, gate):
        index = torch.nonzero(keep).squeeze(-1)
        return (hidden[index].float() * gate[index, None]).to(hidden.dtype)
