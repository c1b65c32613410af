"""Made-up test problem (published format) with boolean and uint8 tensors: logits of tokens a sequence has seen
(in its prompt, or generated at least once) divided by the row's penalty where positive and multiplied by it
where not; also returns which tokens were seen. It holds a buffer that forward never reads."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("format_version", torch.ones(1))  # held, never read by forward

    def forward(self, logits: torch.Tensor, prompt_mask: torch.Tensor, output_counts: torch.Tensor,
                penalties: torch.Tensor) -> dict[str, torch.Tensor]:
        seen = prompt_mask | (output_counts > 0)
        pen = penalties.unsqueeze(1)
        penalised = torch.where(logits > 0, logits / pen, logits * pen)
        return {"logits": torch.where(seen, penalised, logits), "seen": seen}
