"""Does not parse."""

class Model(nn.Module)
    pass
