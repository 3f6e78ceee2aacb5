"""Protobuf values, read by protobuf's runtime from descriptors: a registry's schema is `.proto` source (compiled by
the protoc grpcio-tools bundles) or a base64 FileDescriptorProto (what Confluent's Python serializer registers, and
`?format=serialized` answers); a user may also give a compiled descriptor set (`protoc --descriptor_set_out`).

The message is chosen by the framing's message indexes: the first picks a message of the schema's file, each next
one a message nested in it. Values are written in protobuf's canonical JSON mapping (int64 as text, enums by name),
with the field names of the .proto.
"""

from __future__ import annotations

import base64
import binascii
import os
import subprocess
import sys
import tempfile
from typing import Any

from kdissect.values.decoders import Decode, Failure, LibraryMissing, Result, SchemaInvalid, plain
from kdissect.values.framing import read_indexes
from kdissect.values.schemas import Book, Schema
from kdissect.wire import WireError

PROTOC_SECONDS = 60
"""A .proto that protoc has not compiled by then is given up."""


def compile_protobuf(schema: Schema, book: Book) -> Decode:
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
        from google.protobuf.json_format import MessageToDict
    except ImportError:
        raise LibraryMissing("Protobuf needs protobuf: pip install 'kdissect[values]'") from None
    files = _file_protos(schema, book, descriptor_pb2)
    pool = descriptor_pool.DescriptorPool()
    _add_with_dependencies(pool, files, descriptor_pb2)
    main = pool.FindFileByName(files[-1].name)
    classes: dict[tuple[int, ...], Any] = {}

    def message_class(indexes: tuple[int, ...]) -> Any:
        cls = classes.get(indexes)
        if cls is None:
            messages = main.message_types_by_name
            descriptor = None
            for index in indexes:
                choices = list(messages.values())
                if index >= len(choices):
                    return None
                descriptor = choices[index]
                messages = descriptor.nested_types_by_name
            cls = classes[indexes] = message_factory.GetMessageClass(descriptor)
        return cls

    def decode(data: bytes, start: int, indexes: tuple[int, ...] | None) -> Result:
        if indexes is None:
            try:
                indexes, start = read_indexes(data, start)
            except WireError as exc:
                return Result(failure=Failure("value.bad-indexes", f"Protobuf message indexes: {exc}", exc.offset))
        cls = message_class(indexes)
        if cls is None:
            return Result(failure=Failure("value.bad-indexes", f"message indexes {list(indexes)} name no message of {main.name}", start))
        try:
            message = cls.FromString(data[start:])
        except Exception as exc:  # google.protobuf.message.DecodeError, which says no offset
            return Result(failure=Failure("value.malformed", f"Protobuf ({cls.DESCRIPTOR.full_name}): {exc}", start))
        return Result(plain(MessageToDict(message, preserving_proto_field_name=True)), name=cls.DESCRIPTOR.full_name)

    return decode


def _file_protos(schema: Schema, book: Book, descriptor_pb2: Any) -> list[Any]:
    """The schema's FileDescriptorProtos, its own last: from a descriptor set, base64 bytes, or .proto source."""
    if schema.binary is not None:
        try:
            found = list(descriptor_pb2.FileDescriptorSet.FromString(schema.binary).file)
        except Exception as exc:
            raise SchemaInvalid(f"not a Protobuf descriptor set: {exc}") from None
        if not found:
            raise SchemaInvalid("an empty Protobuf descriptor set")
        return found
    text = schema.text.strip()
    if text and "{" not in text:  # no .proto source has no brace: base64 of a FileDescriptorProto
        try:
            return [descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text, validate=True))]
        except (binascii.Error, ValueError, Exception) as exc:
            raise SchemaInvalid(f"neither .proto source nor a base64 FileDescriptorProto: {exc}") from None
    return _compiled(schema, book, descriptor_pb2)


def _compiled(schema: Schema, book: Book, descriptor_pb2: Any) -> list[Any]:
    """.proto source through grpcio-tools' protoc (in a child process, so its messages are captured, not printed), with
    the imports the schema references (by subject and version) and protobuf's well-known types."""
    try:
        import grpc_tools
    except ImportError:
        raise LibraryMissing(".proto source needs grpcio-tools' protoc: pip install 'kdissect[values]'") from None
    with tempfile.TemporaryDirectory(prefix="kdissect-proto-") as folder:
        name = "schema.proto"
        for reference in schema.references:
            referenced = book.by_version(reference.subject, reference.version)
            if referenced is not None and _safe(reference.name):
                _write(folder, reference.name, referenced.text)
        _write(folder, name, schema.text)
        out = os.path.join(folder, "schema.desc")
        include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
        command = [sys.executable, "-m", "grpc_tools.protoc", f"-I{folder}", f"-I{include}", "--include_imports"]
        try:
            done = subprocess.run(
                [*command, f"--descriptor_set_out={out}", os.path.join(folder, name)], capture_output=True, timeout=PROTOC_SECONDS
            )
        except subprocess.TimeoutExpired:
            raise SchemaInvalid(f"protoc did not finish within {PROTOC_SECONDS} s") from None
        if done.returncode != 0:
            words = done.stderr.decode("utf-8", "replace").strip().replace(folder + os.sep, "")
            raise SchemaInvalid(f"protoc: {words.splitlines()[0] if words else 'failed'}")
        with open(out, "rb") as made:
            files = list(descriptor_pb2.FileDescriptorSet.FromString(made.read()).file)
    own = [f for f in files if f.name == name]
    return [f for f in files if f.name != name] + own


def _safe(name: str) -> bool:
    """An import path a registry gave, which must stay inside the temporary folder."""
    return bool(name) and not os.path.isabs(name) and ".." not in name.split("/")


def _write(folder: str, name: str, text: str) -> None:
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)


def _add_with_dependencies(pool: Any, files: list[Any], descriptor_pb2: Any) -> None:
    """Add the files in an order their imports allow; a well-known type (google/protobuf/...) comes from the runtime."""
    from google.protobuf import descriptor_pool

    given = {f.name for f in files}
    needed = {dep for f in files for dep in f.dependency if dep not in given}
    for dep in sorted(needed):
        try:
            known = descriptor_pool.Default().FindFileByName(dep)
        except KeyError:
            _import_well_known(dep)
            try:
                known = descriptor_pool.Default().FindFileByName(dep)
            except KeyError:
                raise SchemaInvalid(f"it imports {dep}, which no source gave") from None
        proto = descriptor_pb2.FileDescriptorProto()
        known.CopyToProto(proto)
        pool.Add(proto)
    for f in files:
        try:
            pool.Add(f)
        except Exception as exc:  # TypeError from upb: a duplicate or unresolved name
            raise SchemaInvalid(f"protobuf will not load {f.name}: {exc}") from None


def _import_well_known(name: str) -> None:
    """google/protobuf/timestamp.proto's module (google.protobuf.timestamp_pb2) registers it in the default pool."""
    if name.startswith("google/protobuf/") and name.endswith(".proto"):
        import importlib

        try:
            importlib.import_module("google.protobuf." + name.rsplit("/", 1)[1][: -len(".proto")] + "_pb2")
        except ImportError:
            pass
