"""A tiny Philly-format trace for the bench tests: 14 jobs over 5 hours that overflow one 8-GPU node."""

from __future__ import annotations

from pathlib import Path

HEADER = ("job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,"
          "expect_value_list,best_effort,job_type\n")
# (submit minute, GPUs, runtime minutes, deadline slack minutes, class)
JOBS = [(0, 4, 90, 200, "strict"), (5, 4, 60, 150, "soft"), (10, 8, 120, 400, "best"), (20, 2, 45, 120, "strict"),
        (30, 1, 30, 90, "soft"), (60, 8, 60, 200, "best"), (75, 4, 100, 300, "strict"), (90, 2, 40, 120, "soft"),
        (120, 6, 80, 240, "best"), (150, 1, 20, 60, "strict"), (180, 8, 90, 300, "soft"), (200, 3, 60, 200, "best"),
        (240, 4, 45, 150, "strict"), (290, 2, 30, 100, "soft")]


def write_trace(folder: Path, name: str = "trace_job_Philly_tiny.csv") -> Path:
    path = folder / name
    rows = [f"{i},vc,{g},{t},1,vgg,{d},1,{d + s},10,0,{c}\n" for i, (t, g, d, s, c) in enumerate(JOBS)]
    path.write_text(HEADER + "".join(rows))
    return path
