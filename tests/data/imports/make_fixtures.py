"""Make the import fixtures of tests/test_import.py with the real tools (run from the
repository root; what it writes is committed):

    pip install -e ".[bench]"                      # inspect_ai (its version is in the logs)
    (mkdir -p bench/.work/pf && cd bench/.work/pf && npm install promptfoo)          # promptfoo, on Node 20 or 22
    python tests/data/imports/make_fixtures.py --promptfoo bench/.work/pf/node_modules/.bin/promptfoo

The same six cases (cases.jsonl) and the same product (answers.py, v1 then v2) through:

- inspect_ai, the model `mockllm/model` answering with `answers.answer`: `inspect-v1.eval`
  (the zip format), `inspect-v2.json` (the JSON format), `inspect-epochs.eval` (v1, two
  epochs); scorers `includes()` (pass/fail) and `brevity` (graded);
- promptfoo, a Python provider (provider.py): `promptfoo-v1.json`, `promptfoo-v2.json`
  (`promptfoo eval -o`); assertions `icontains` the expected answer and a `javascript`
  length check (at most six words).

The inspect_ai logs are written again by inspect_ai itself without the samples' event
transcripts and tracebacks (size, and the directories of the machine that made them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from answers import CASES, answer  # noqa: E402


def inspect_logs(out: Path) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, Target, includes, mean, scorer
    from inspect_ai.solver import TaskState, generate

    @scorer(metrics=[mean()])
    def brevity():  # graded: 1 for a reply of three words or fewer, less for longer ones
        async def score(state: TaskState, target: Target) -> Score:
            words = len(state.output.completion.split())
            return Score(value=min(1.0, 3 / max(words, 1)), answer=state.output.completion)

        return score

    def task() -> Task:
        samples = [Sample(id=c["id"], input=c["input"]["question"], target=c["expected"], metadata=c["metadata"])
                   for c in CASES]
        return Task(name="capitals", dataset=MemoryDataset(samples, name="capitals"), solver=generate(),
                    scorer=[includes(), brevity()])

    def model(version: str):
        def reply(messages, tools, tool_choice, config):  # noqa: ANN001, ANN202
            question = messages[-1].text
            out = ModelOutput.from_content(model="mockllm/model", content=answer(question, version))
            # usage as a provider reports it (words here); without it mockllm counts tokens
            # with tiktoken, which downloads its tables
            n_in, n_out = len(question.split()), len(out.completion.split())
            out.usage = ModelUsage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out)
            return out

        return get_model("mockllm/model", custom_outputs=reply, config=GenerateConfig(temperature=0.0))

    for name, version, fmt, epochs in (("inspect-v1", "v1", "eval", 1), ("inspect-v2", "v2", "json", 1),
                                       ("inspect-epochs", "v1", "eval", 2)):
        with tempfile.TemporaryDirectory() as log_dir:
            (log,) = eval(task(), model=model(version), log_dir=log_dir, log_format=fmt, epochs=epochs,
                          fail_on_error=False, display="none", max_samples=1)
            # Kept small and free of this machine's directories: inspect_ai reads the log and
            # writes it again without the samples' event transcripts and tracebacks (the
            # error's message stays); everything else is as the run wrote it.
            full = read_eval_log(log.location)
            for sample in full.samples or []:
                sample.events = []
                if sample.error is not None:
                    sample.error.traceback = sample.error.traceback_ansi = ""
            write_eval_log(full, str(out / f"{name}.{fmt}"), format=fmt)


def promptfoo_results(promptfoo: str, out_dir: Path) -> None:
    tests = "".join(
        f"  - description: {c['id']}\n    vars:\n      question: \"{c['input']['question']}\"\n"
        f"      expected: {c['expected']}\n    metadata:\n      group: {c['metadata']['group']}\n"
        for c in CASES)
    for version in ("v1", "v2"):
        with tempfile.TemporaryDirectory() as work:
            for name in ("provider.py", "answers.py", "cases.jsonl"):  # paths relative to the config
                shutil.copy2(HERE / name, Path(work) / name)
            config = Path(work) / "promptfooconfig.yaml"
            config.write_text(
                "description: capitals\nprompts:\n  - \"{{question}}\"\n"
                f"providers:\n  - id: file://provider.py\n    label: answers-{version}\n"
                f"    config:\n      version: {version}\n"
                "defaultTest:\n  assert:\n    - type: icontains\n      value: \"{{expected}}\"\n"
                "    - type: javascript\n      value: output.split(' ').length <= 6\n      metric: brevity\n"
                f"tests:\n{tests}")
            out = Path(work) / "results.json"
            env = {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
                   "PROMPTFOO_CONFIG_DIR": str(Path(work) / ".promptfoo"), "PROMPTFOO_PYTHON": sys.executable}
            proc = subprocess.run([promptfoo, "eval", "-c", config.name, "-o", out.name, "--no-cache",
                                   "--max-concurrency", "1", "--no-table", "--no-progress-bar"],
                                  cwd=work, env=env, capture_output=True, text=True, timeout=600)
            if not out.is_file():
                sys.exit(f"promptfoo eval failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
            shutil.copy2(out, out_dir / f"promptfoo-{version}.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--promptfoo", help="the promptfoo executable (skipped without it)")
    parser.add_argument("--only", choices=["inspect", "promptfoo"])
    parser.add_argument("--out", type=Path, default=HERE, help="where to write them (default: beside this script)")
    args = parser.parse_args()
    if args.only != "promptfoo":
        inspect_logs(args.out)
    if args.promptfoo and args.only != "inspect":
        promptfoo_results(args.promptfoo, args.out)


if __name__ == "__main__":
    main()
