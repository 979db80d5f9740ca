"""Rich tool results: images, audio and resources, as small immutable records.

A tool may return `Image`, `Audio`, `Resource` (or `ResourceLink`), or a list mixing them with text.
Objects people already have in a notebook are converted on the way out by `as_content`: PIL images,
matplotlib figures, `IPython.display.Image` and `IPython.display.Audio`. None of those libraries is
imported here: an object is recognised by its class's module and attributes, so `import nbtools`
stays light and a library that is not installed is never a requirement.

Where each record goes: the MCP server turns them into image/audio/resource content blocks
(`mcp/toolresults.py`); a provider's tool-result message carries what that provider's format can hold
(`formats/replies.py`): Anthropic image blocks, text saying what was produced elsewhere. The MCP
client (`mcp/client.py`) gives back the same records for a remote server's blocks.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from .ir import _Record, _record  # immutable dataclasses without generated code (cheap to import)

__all__ = ["Image", "Audio", "Resource", "ResourceLink", "Content", "as_content", "content_parts",
           "describe", "is_content_annotation"]


@_record
class Image(_Record):
    """An image: raw bytes and their MIME type (`image/png`, `image/jpeg`, ...)."""

    data: bytes
    mime: str = "image/png"

    def __init__(self, data: bytes, mime: str = "image/png") -> None:
        self.__dict__.update(data=data, mime=mime)

    def base64(self) -> str:
        """The bytes as base64 text (what MCP and the providers' image blocks carry)."""
        return base64.b64encode(self.data).decode("ascii")

    @classmethod
    def from_base64(cls, text: str, mime: str = "image/png") -> "Image":
        return cls(base64.b64decode(text), mime)

    def _repr_png_(self) -> bytes | None:  # shown as a picture in a notebook
        return self.data if self.mime == "image/png" else None

    def _repr_jpeg_(self) -> bytes | None:
        return self.data if self.mime == "image/jpeg" else None

    def __repr__(self) -> str:
        return f"Image({self.mime}, {len(self.data)} bytes)"


@_record
class Audio(_Record):
    """Audio: raw bytes and their MIME type (`audio/wav`, `audio/mpeg`, ...)."""

    data: bytes
    mime: str = "audio/wav"

    def __init__(self, data: bytes, mime: str = "audio/wav") -> None:
        self.__dict__.update(data=data, mime=mime)

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    @classmethod
    def from_base64(cls, text: str, mime: str = "audio/wav") -> "Audio":
        return cls(base64.b64decode(text), mime)

    def __repr__(self) -> str:
        return f"Audio({self.mime}, {len(self.data)} bytes)"


@_record
class Resource(_Record):
    """A resource embedded in the result: `text` or `blob` (bytes), identified by `uri`."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime: str | None = None

    def __init__(self, uri: str, text: str | None = None, blob: bytes | None = None, mime: str | None = None) -> None:
        if (text is None) == (blob is None):
            raise ValueError(f"Resource({uri!r}): give exactly one of text= or blob=")
        self.__dict__.update(uri=uri, text=text, blob=blob, mime=mime)


@_record
class ResourceLink(_Record):
    """A link to a resource the client may read later (MCP `resource_link` content)."""

    uri: str
    name: str = ""
    description: str | None = None
    mime: str | None = None

    def __init__(self, uri: str, name: str = "", description: str | None = None, mime: str | None = None) -> None:
        self.__dict__.update(uri=uri, name=name, description=description, mime=mime)


Content = Image | Audio | Resource | ResourceLink
_RECORDS = (Image, Audio, Resource, ResourceLink)


def is_content_annotation(annotation: Any) -> bool:
    """Whether a return annotation names a content record anywhere (`Image`, `list[str | Image]`, ...):
    such a tool returns content blocks, so it has no JSON return schema (no MCP `outputSchema`)."""
    import typing

    if isinstance(annotation, type):
        return issubclass(annotation, _RECORDS)
    return any(is_content_annotation(arg) for arg in typing.get_args(annotation))


def _class_path(value: Any) -> tuple[str, str]:
    cls = type(value)
    return getattr(cls, "__module__", "") or "", cls.__name__


def as_content(value: Any) -> Content | None:
    """`value` as a content record when it is one or is a known rich object, else None.

    Known objects (recognised without importing their libraries): a PIL image (saved as PNG), a
    matplotlib Figure (saved as PNG), `IPython.display.Image` (its bytes and format), and
    `IPython.display.Audio` (its WAV bytes).
    """
    if isinstance(value, _RECORDS):
        return value
    module, name = _class_path(value)
    root = module.split(".", 1)[0]
    if root == "PIL" and hasattr(value, "save") and hasattr(value, "mode"):
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return Image(buffer.getvalue(), "image/png")
    if root == "matplotlib" and name == "Figure" and hasattr(value, "savefig"):
        buffer = io.BytesIO()
        value.savefig(buffer, format="png", bbox_inches="tight")
        return Image(buffer.getvalue(), "image/png")
    if root == "IPython" and name == "Image" and isinstance(getattr(value, "data", None), bytes):
        fmt = (getattr(value, "format", None) or "png").lower()
        return Image(value.data, "image/jpeg" if fmt in ("jpg", "jpeg") else f"image/{fmt}")
    if root == "IPython" and name == "Audio" and isinstance(getattr(value, "data", None), bytes):
        return Audio(value.data, getattr(value, "mimetype", None) or "audio/wav")
    return None


def content_parts(value: Any) -> list[Any] | None:
    """A result with rich parts as a list of `str` and content records; None for a plain result.

    A single rich value gives a one-item list; a list or tuple in which at least one item is rich
    gives its items in order (rich ones converted, text kept, anything else left as it is for the
    caller to turn into text). Anything else is a plain result (None): the caller's usual path.
    """
    single = as_content(value)
    if single is not None:
        return [single]
    if isinstance(value, (list, tuple)) and value:
        converted = [as_content(item) for item in value]
        if any(item is not None for item in converted):
            return [rich if rich is not None else item for rich, item in zip(converted, value)]
    return None


def describe(item: Content) -> str:
    """One line of text standing in for a record where only text can go (a provider's tool result)."""
    if isinstance(item, Image):
        return f"[image produced: {item.mime}, {len(item.data)} bytes]"
    if isinstance(item, Audio):
        return f"[audio produced: {item.mime}, {len(item.data)} bytes]"
    if isinstance(item, Resource):
        if item.text is not None:
            return f"[resource {item.uri}]\n{item.text}"
        return f"[resource {item.uri}: {item.mime or 'binary'}, {len(item.blob or b'')} bytes]"
    return f"[resource link {item.uri}" + (f": {item.name}" if item.name else "") + "]"
