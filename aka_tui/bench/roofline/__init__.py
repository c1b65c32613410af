"""The yardstick: hardware profiles (datasheet peaks per execution path, package data under `profiles/`, and
profiles measured by `aka hw calibrate`), the semantic work W (FLOPs) and traffic Q (bytes) of each shape counted
from the reference (`flop_count`, `bound`), cached in each problem's `roofline.json` (`refresh`), and the speed of
light T_SOL = max(ΣW_path / P_path, Q / B) on a profile. Calibration and the empty-launch floor time with the
measurement engine's timer.
"""
