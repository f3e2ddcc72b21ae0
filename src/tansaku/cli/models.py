"""`tansaku models list|pull|add|import|path`: which model files the roles use, and fetching them.

Choices are the person's, for every index (the user-wide models file), unless `--this-index`
keeps one to the current index (its config); `models list` says which applies.

`pull` is the only command in tansaku that uses the network of its own accord (a role pointed at
a model server is asked when a command uses that role). The registry is imported by the
handlers, not here: every command pays for what this module imports when the parser is built.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import Output, add_format_options, add_index_option, api_for, complete_with

ADMIN_FORMATS = ("cli", "json")
# The same tuple as models.registry.ROLES (a test keeps them equal), spelled out so that building
# the parser does not import the models package.
ROLES = ("embed", "generate", "rerank")


def register(commands: Any) -> None:
    group = commands.add_parser("models", help="the model files for embedding, generation and reranking")
    add_index_option(group)
    sub = group.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True

    _common(
        sub.add_parser("list", help="each role's model: reference, source, local file, size, dims"), _list
    )

    pull = sub.add_parser(
        "pull",
        help="download hf: models into the models cache (default: the missing ones `query` uses by"
        " default on this machine: on a CPU, the embed model); needs network",
    )
    # No `choices`: argparse would then reject an empty ROLE list; the completer offers them instead.
    roles = pull.add_argument("roles", nargs="*", metavar="ROLE", help=f"any of: {', '.join(ROLES)}")
    complete_with(roles, _roles)
    _common(pull, _pull)

    add = sub.add_parser(
        "add",
        help="use a local GGUF file, or a model on an OpenAI-compatible server, for ROLE in every index"
        " (the user-wide models file)",
    )
    add.add_argument("role", choices=ROLES)
    add.add_argument(
        "path",
        help="a .gguf file, or an endpoint http(s)://HOST[:PORT]/v1#MODEL (its key comes from"
        " TANSAKU_API_KEY, never the config)",
    )
    _this_index_option(add)
    _common(add, _add)

    convert = sub.add_parser(
        "import",
        help="convert a BERT-family sentence-transformers folder to GGUF and use it for embed (offline)",
    )
    convert.add_argument(
        "folder", help="a sentence-transformers model folder (config.json, model.safetensors, ...)"
    )
    convert.add_argument(
        "--name",
        help="the model's name, for its file in the models folder (default: the folder's name, or the"
        " name in its model card when the folder has a generic one such as 'model')",
    )
    convert.add_argument(
        "--dtype", choices=("f16", "f32"), default="f16", help="weight precision (default f16)"
    )
    _this_index_option(convert)
    _common(convert, _import)

    path = sub.add_parser("path", help="print the local file of ROLE's model (exit 1 if it is missing)")
    path.add_argument("role", choices=ROLES)
    _common(path, _path)


def _roles(prefix: str, **_: Any) -> tuple[str, ...]:
    return ROLES


def _this_index_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--this-index",
        action="store_true",
        help="save the choice in this index's config only (default: the user-wide models file, used by"
        " every index that does not set its own)",
    )


# How `models list` names each source: which file's choice applies.
SOURCE_SHOWN = {"config": "index", "user": "user"}


def _common(parser: argparse.ArgumentParser, handler: Any) -> None:
    add_index_option(parser)
    add_format_options(parser, ADMIN_FORMATS)
    parser.set_defaults(handler=handler)


def _where(ref: Any) -> str:
    endpoint = ref.endpoint
    if endpoint is None:
        return str(ref.local_path)
    machine = "this machine" if endpoint.loopback else "another machine"
    return f"(none: model {endpoint.model!r} served at {endpoint.base_url}, {machine})"


def _ref_data(ref: Any, dims: int | None) -> dict[str, Any]:
    endpoint = ref.endpoint
    return {
        "role": ref.role,
        "reference": ref.reference,
        "source": ref.source,
        "local_path": str(ref.local_path) if endpoint is None else None,
        "endpoint": None
        if endpoint is None
        else {
            "base_url": endpoint.base_url,
            "model": endpoint.model,
            "loopback": endpoint.loopback,
        },
        "present": ref.present,
        "size": ref.size,
        "dims": dims,
        "set_in": str(ref.set_in) if ref.set_in is not None else None,
    }


def _list(args: argparse.Namespace, out: Output) -> int:
    from ..inspect.settings import thread_setting
    from ..models import registry
    from ..render.admin import human_size, table

    config_path = api_for(args).config_path
    refs = registry.resolve_all(config_path)
    dims = {r.role: _dims(r) for r in refs}
    user_file = registry.user_models_path(config_path)
    rows = [["role", "status", "size", "dims", "source", "reference"]]
    for r in refs:
        shown_dims = "-" if not r.present or r.endpoint is not None else str(dims[r.role] or "?")
        size = human_size(r.size) if r.size is not None else "-"
        source = SOURCE_SHOWN.get(r.source, r.source)
        status = "remote" if r.endpoint is not None else "present" if r.present else "missing"
        rows.append([r.role, status, size, shown_dims, source, r.reference])
    lines = table(rows, right=frozenset({2, 3}))
    lines += ["", "local files:"] + [f"  {r.role:<9} {_where(r)}" for r in refs]
    threads = thread_setting(config_path)
    lines += ["", f"threads: {threads.describe()}" + (f" ({threads.problem})" if threads.problem else "")]
    lines += [
        "source: env (TANSAKU_ROLE_MODEL) > index (this index's own choice) > user (every index's) > default",
        f"  index: [models] ROLE in {config_path}",
        f"  user:  [models] ROLE in {user_file}",
    ]
    if any(not r.present and r.hf for r in refs):
        lines += [
            "",
            "download missing hf: models with `tansaku models pull`, or `tansaku models add ROLE PATH`",
        ]
    out.render(
        {
            "models": [_ref_data(r, dims[r.role]) for r in refs],
            "model_dir": str(registry.model_dir()),
            "config_file": str(config_path),
            "user_models_file": str(user_file),
            "threads": {"value": threads.value, "source": threads.source, "problem": threads.problem},
            "message": "\n".join(lines),
        }
    )
    return 0


def _pull(args: argparse.Namespace, out: Output) -> int:
    from ..errors import ModelMissing, UsageError
    from ..models import download, registry

    for role in args.roles:
        if role not in ROLES:
            raise UsageError(f"unknown model role {role!r}", hint=f"use one of: {', '.join(ROLES)}")
    api = api_for(args)
    config_path = api.config_path
    asked = list(dict.fromkeys(args.roles))
    left_out = {} if asked else api.roles_left_out()
    refs = [registry.resolve(role, config_path) for role in asked or ROLES if role not in left_out]
    lines = [
        f"{role}: not pulled: {why}; `tansaku models pull {role}` fetches it"
        for role, why in left_out.items()
    ]
    for ref in refs:
        if ref.endpoint is not None:
            lines.append(f"{ref.role}: served by {ref.endpoint.base_url}; nothing to download")
            continue
        if ref.hf is None and not ref.present and asked:
            raise ModelMissing(
                f"the {ref.role} model is a local file that does not exist: {ref.local_path}",
                hint=f"point the role at a GGUF file with `tansaku models add {ref.role} PATH`",
            )
        if ref.hf is None:
            state = "present" if ref.present else "MISSING: set it with `tansaku models add`"
            lines.append(f"{ref.role}: local file {ref.local_path} ({state}); nothing to download")
        elif ref.present:
            lines.append(f"{ref.role}: already present: {ref.local_path}")
    wanted = [ref for ref in refs if ref.hf is not None and not ref.present]
    progress = sys.stderr.isatty() and out.fmt == "cli"
    if progress:
        for ref in wanted:
            sys.stderr.write(f"pulling {ref.role}: {ref.reference}\n")
    try:
        paths = download.pull(wanted, progress=progress)
    except KeyboardInterrupt:  # main() reports the interruption itself; say that nothing is lost
        sys.stderr.write("pull interrupted: what was downloaded is kept; `tansaku models pull` resumes it\n")
        raise
    pulled = [registry.resolve(ref.role, config_path) for ref in wanted]
    for ref, path in zip(pulled, paths, strict=True):
        lines.append(f"{ref.role}: downloaded {ref.reference} -> {path} ({ref.size} bytes)")
    if not wanted:
        lines.append("nothing to download")
    out.render(
        {
            "pulled": [_ref_data(r, _dims(r)) for r in pulled],
            "skipped": [r.role for r in refs if r.role not in {w.role for w in wanted}],
            "left_out": [{"role": role, "why": why} for role, why in left_out.items()],
            "message": "\n".join(lines),
        }
    )
    return 0


def _add(args: argparse.Namespace, out: Output) -> int:
    from pathlib import Path

    from ..models import registry

    config_path = api_for(args).config_path
    target = args.path if registry.is_endpoint(args.path) else Path(args.path)
    done = registry.register(args.role, target, config_path, scope=_scope(args))
    ref = done.ref
    out.render(
        {
            **_ref_data(ref, _dims(ref)),
            "config": str(done.saved_in),
            "scope": _scope(args),
            "dropped_from_index": done.dropped_from_index,
            "indexes_with_own": list(done.others_keep_own),
            "message": registered_message(done, path_given(args), _scope(args)),
        }
    )
    return 0


def _scope(args: argparse.Namespace) -> str:
    return "index" if args.this_index else "user"


def registered_message(done: Any, given: str, scope: str) -> str:
    from ..models import registry

    ref = done.ref
    if ref.source == "env":  # the environment variable wins over the file just written
        return (
            f"{ref.role}: saved {given} in {done.saved_in}, but {registry.env_var(ref.role)} is set"
            f" and wins over the config: {ref.role} still uses {_uses(ref)}; unset it to use the new file"
        )
    where = "this index" if scope == "index" else "every index"
    lines = [f"{ref.role}: now uses {_uses(ref)} in {where} (saved in {done.saved_in})"]
    if ref.endpoint is not None:
        lines.append(
            f"the API key, if the server needs one, comes from TANSAKU_API_KEY (or the variable"
            f" [models] {ref.role}_api_key_env names); `tansaku doctor` checks the endpoint"
        )
    if done.dropped_from_index:
        lines.append(
            f"this index's own {ref.role} choice ({done.dropped_from_index}) was removed from its config"
        )
    if done.others_keep_own:
        names = ", ".join(done.others_keep_own)
        lines.append(
            f"these indexes set their own {ref.role} model and keep it: {names}"
            f" (`tansaku --index NAME models add {ref.role} PATH` to change one)"
        )
    return "\n".join(lines)


def path_given(args: argparse.Namespace) -> str:
    import os

    from ..models import registry

    if registry.is_endpoint(args.path):
        return registry.parse_endpoint(args.path).reference
    return os.path.abspath(os.path.expanduser(args.path))


def _dims(ref: Any) -> int | None:
    """A local file's dimensions from its header; an endpoint's are known only by asking it
    (`doctor` does)."""
    from ..models import registry

    if ref.endpoint is not None or not ref.present:
        return None
    return registry.embedding_length(ref.local_path)


def _uses(ref: Any) -> str:
    """What the role uses, as a person reads it: the file, or the model at its server."""
    return ref.endpoint.reference if ref.endpoint is not None else str(ref.local_path)


def _import(args: argparse.Namespace, out: Output) -> int:
    """Only BERT-family models (MiniLM, BGE, E5 and the like): what the converter knows how to map."""
    from pathlib import Path

    from ..errors import PathNotFound, UsageError
    from ..models import registry
    from ..models.convert import convert_sentence_transformer, file_safe, model_name

    folder = Path(args.folder).expanduser()
    if not folder.is_dir():
        raise PathNotFound(f"{args.folder!r} is not a folder")
    name = args.name or model_name(folder)
    target = registry.model_dir() / "imported" / f"{file_safe(name)}-{args.dtype}.gguf"
    try:
        info = convert_sentence_transformer(folder, target, dtype=args.dtype, name=name)
    except ImportError as exc:
        raise UsageError(str(exc), hint="pip install 'tansaku[models]'") from exc
    except (ValueError, FileNotFoundError) as exc:
        raise UsageError(
            f"cannot convert {folder}: {exc}",
            hint="only BERT-family sentence-transformers folders are supported",
        ) from exc
    config_path = api_for(args).config_path
    done = registry.register("embed", info.out_path, config_path, scope=_scope(args))
    message = (
        f"converted {folder} ({name}) to {info.out_path} ({info.dims} dims, {info.layers} layers,"
        f" {info.pooling} pooling)\n{registered_message(done, str(info.out_path), _scope(args))}"
        "\nRun `tansaku embed`."
    )
    out.render(
        {
            **_ref_data(done.ref, info.dims),
            "name": name,
            "config": str(done.saved_in),
            "scope": _scope(args),
            "sha256": info.sha256,
            "message": message,
        }
    )
    return 0


def _path(args: argparse.Namespace, out: Output) -> int:
    from ..errors import ModelMissing
    from ..models import registry

    ref = registry.resolve(args.role, api_for(args).config_path)
    if ref.endpoint is not None:
        raise ModelMissing(
            f"the {ref.role} model is served by {ref.endpoint.base_url} (model {ref.endpoint.model!r}):"
            " there is no local file",
            role=ref.role,
            reference=ref.reference,
        )
    if not ref.present:
        if ref.hf is not None:
            hint = (
                f"download it with `tansaku models pull {ref.role}`, or fetch {ref.reference} yourself "
                f"and `tansaku models add {ref.role} PATH`"
            )
        else:
            hint = f"point the role at an existing GGUF file with `tansaku models add {ref.role} PATH`"
        raise ModelMissing(
            f"the {ref.role} model is not on this machine: {ref.local_path}",
            hint=hint,
            role=ref.role,
            reference=ref.reference,
            path=str(ref.local_path),
        )
    out.render({**_ref_data(ref, None), "path": str(ref.local_path), "message": str(ref.local_path)})
    return 0
