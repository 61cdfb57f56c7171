"""hybrid3d's models in PyTorch (docs/design.md section 6), for comparison only (never in the
training path): the benchmarks' peers (perf_tests/step/pytorch_step.py,
perf_tests/predict/pytorch_predict.py) and the inference reference
(unit_tests/reference/predict/make_predict_reference.py) build them from here, so there is one
copy of each. Module attribute names follow the checkpoint's layer names (design.md section 7),
so `checkpoint_name` maps every parameter and buffer to its `/model/<layer>/<param>` dataset.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def window_out(e, k, s, p):
    return (e + 2 * p - k) // s + 1


class CosmoFlow(nn.Module):
    """LBANN 2020 CosmoFlow: conv1..conv7 (k3, p1, no bias; conv4 stride 2) each with
    LeakyReLU(0.01); average pools (3, 2, 1, padding counted) after conv1..conv5, after conv6
    when S >= 256 and after conv7 when S = 512, only where the input extent is >= 4; dropout
    (keep 0.8 unless `keep` says otherwise) before fc1, fc2, fc3; LeakyReLU(0.01) after fc1 and
    fc2."""

    input_channels = 4

    def __init__(self, S, keep=0.8):
        super().__init__()
        chans = [4, 16, 32, 64, 128, 256, 256, 256]
        self.pools = []
        e = S
        for i in range(1, 8):
            stride = 2 if i == 4 else 1
            self.add_module(f"conv{i}", nn.Conv3d(chans[i - 1], chans[i], 3, stride=stride, padding=1,
                                                  bias=False))
            e = window_out(e, 3, stride, 1)
            pool = i <= 5 or (i == 6 and S >= 256) or (i == 7 and S == 512)
            self.pools.append(pool and e >= 4)
            if self.pools[-1]:
                e = window_out(e, 3, 2, 1)
        flat = 256 * e ** 3
        self.fc1 = nn.Linear(flat, 2048)
        self.fc2 = nn.Linear(2048, 256)
        self.fc3 = nn.Linear(256, 4)
        self.drop = nn.Dropout(p=1 - keep)

    def forward(self, x):
        for i, pool in enumerate(self.pools, start=1):
            x = F.leaky_relu(getattr(self, f"conv{i}")(x), 0.01)
            if pool:
                x = F.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=True)
        x = torch.flatten(x, 1)  # (C, D, H, W) order, as hybrid3d's flattenDense
        x = F.leaky_relu(self.fc1(self.drop(x)), 0.01)
        x = F.leaky_relu(self.fc2(self.drop(x)), 0.01)
        return self.fc3(self.drop(x))


class CosmoFlowMlperf(nn.Module):
    """MLPerf HPC reference: log1p of the input, conv1..conv5 (k3, p1, with bias) each with
    LeakyReLU(0.3) and max pool 2/2; fc1 (-> 128), LeakyReLU(0.3), dropout (keep 0.5), fc2
    (-> 64), LeakyReLU(0.3), dropout, fc3 (-> 4), 1.2 tanh."""

    input_channels = 4

    def __init__(self, S, keep=0.5):
        super().__init__()
        chans = [4, 32, 64, 128, 256, 512]
        for i in range(1, 6):
            self.add_module(f"conv{i}", nn.Conv3d(chans[i - 1], chans[i], 3, padding=1, bias=True))
        self.fc1 = nn.Linear(512 * (S // 32) ** 3, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 4)
        self.drop = nn.Dropout(p=1 - keep)

    def forward(self, x):
        x = torch.log1p(x)
        for i in range(1, 6):
            x = F.max_pool3d(F.leaky_relu(getattr(self, f"conv{i}")(x), 0.3), 2, 2)
        x = torch.flatten(x, 1)
        x = self.drop(F.leaky_relu(self.fc1(x), 0.3))
        x = self.drop(F.leaky_relu(self.fc2(x), 0.3))
        return 1.2 * torch.tanh(self.fc3(x))


class Block(nn.Module):
    """The U-Net's [a, b]: conv (k3, p1, no bias) -> batch norm -> ReLU, twice; the checkpoint
    names its layers <block>_conv1, <block>_bn1, <block>_conv2, <block>_bn2."""

    def __init__(self, cin, a, b):
        super().__init__()
        self.conv1 = nn.Conv3d(cin, a, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm3d(a)  # momentum 0.1, eps 1e-5: hybrid3d's
        self.conv2 = nn.Conv3d(a, b, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm3d(b)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)), inplace=True)
        return F.relu(self.bn2(self.conv2(x)), inplace=True)


class UNet3d(nn.Module):
    """LBANN 2020 3D U-Net: enc1 [32,64], enc2 [64,128], enc3 [128,256] each followed by max
    pool 2/2, bottom [256,512]; up3..up1 transposed convs (k2, s2, no bias, channels kept),
    concatenation [up, skip], dec3 [256,256], dec2 [128,128], dec1 [64,64]; head 1^3 conv
    with bias, 64 -> 3 classes. Any D, H, W that are multiples of 8."""

    input_channels = 1

    def __init__(self, S=None, keep=1.0):
        super().__init__()
        self.enc1 = Block(1, 32, 64)
        self.enc2 = Block(64, 64, 128)
        self.enc3 = Block(128, 128, 256)
        self.bottom = Block(256, 256, 512)
        self.up3 = nn.ConvTranspose3d(512, 512, 2, stride=2, bias=False)
        self.dec3 = Block(512 + 256, 256, 256)
        self.up2 = nn.ConvTranspose3d(256, 256, 2, stride=2, bias=False)
        self.dec2 = Block(256 + 128, 128, 128)
        self.up1 = nn.ConvTranspose3d(128, 128, 2, stride=2, bias=False)
        self.dec1 = Block(128 + 64, 64, 64)
        self.head = nn.Conv3d(64, 3, 1, bias=True)

    def forward(self, x):
        s1 = self.enc1(x)
        s2 = self.enc2(F.max_pool3d(s1, 2, 2))
        s3 = self.enc3(F.max_pool3d(s2, 2, 2))
        b = self.bottom(F.max_pool3d(s3, 2, 2))
        d3 = self.dec3(torch.cat([self.up3(b), s3], 1))
        d2 = self.dec2(torch.cat([self.up2(d3), s2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), s1], 1))
        return self.head(d1)


ARCHITECTURES = {"cosmoflow": CosmoFlow, "cosmoflow_mlperf": CosmoFlowMlperf, "unet3d": UNet3d}


def build(architecture, S, keep=None):
    """The model the deck's Model/architecture and Model/input width name; `keep` overrides the
    dropout keep probability (Model/dropout keep probability) where given."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"unknown architecture '{architecture}' (known: {', '.join(ARCHITECTURES)})")
    cls = ARCHITECTURES[architecture]
    return cls(S) if keep is None else cls(S, keep=keep)


def checkpoint_name(torch_name):
    """'enc1.bn1.running_mean' -> 'enc1_bn1/running_mean', 'fc1.weight' -> 'fc1/weight'; None for
    what a checkpoint does not hold (batch norm's num_batches_tracked)."""
    *modules, param = torch_name.split(".")
    if param == "num_batches_tracked":
        return None
    return "_".join(modules) + "/" + param
