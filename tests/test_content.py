"""Rich result records and the conversion of notebook objects into them."""

import io

import pytest

from nbtools.content import Audio, Image, Resource, ResourceLink, as_content, content_parts, describe

PNG_1PX = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                        "0000000d4944415478da63f8ffff3f0005fe02fea7d6a4a20000000049454e44ae426082")


def test_records_and_base64_round_trip():
    image = Image(PNG_1PX)
    assert Image.from_base64(image.base64()) == image
    assert image._repr_png_() == PNG_1PX and image._repr_jpeg_() is None
    assert Audio.from_base64(Audio(b"RIFF").base64()) == Audio(b"RIFF", "audio/wav")
    with pytest.raises(ValueError, match="exactly one of text= or blob="):
        Resource("test://x")
    with pytest.raises(ValueError, match="exactly one"):
        Resource("test://x", text="a", blob=b"b")


def test_plain_values_are_not_content():
    for value in ("text", 3, {"a": 1}, [1, "two"], [], None):
        assert as_content(value) is None
        assert content_parts(value) is None


def test_mixed_lists_keep_their_order():
    image = Image(PNG_1PX)
    parts = content_parts(["Multiple content types test:", image, Resource("test://r", text="{}")])
    assert parts == ["Multiple content types test:", image, Resource("test://r", text="{}")]
    assert content_parts(image) == [image]


def test_pil_images_and_matplotlib_figures_become_png():
    PIL = pytest.importorskip("PIL.Image")
    converted = as_content(PIL.new("RGB", (3, 2), "red"))
    assert isinstance(converted, Image) and converted.mime == "image/png"
    assert PIL.open(io.BytesIO(converted.data)).size == (3, 2)
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(1, 1))
    axes.plot([0, 1], [1, 0])
    image = as_content(figure)
    plt.close(figure)
    assert isinstance(image, Image) and image.data.startswith(b"\x89PNG")


def test_ipython_display_objects():
    from IPython.display import Audio as IPyAudio, Image as IPyImage

    assert as_content(IPyImage(data=PNG_1PX, format="png")) == Image(PNG_1PX, "image/png")
    audio = as_content(IPyAudio(data=[0.0, 0.5, -0.5], rate=8000))
    assert isinstance(audio, Audio) and audio.data.startswith(b"RIFF")


def test_descriptions_for_text_only_places():
    assert describe(Image(PNG_1PX)) == f"[image produced: image/png, {len(PNG_1PX)} bytes]"
    assert describe(Resource("test://r", text="hello")) == "[resource test://r]\nhello"
    assert describe(ResourceLink("file:///a.txt", name="a")) == "[resource link file:///a.txt: a]"
