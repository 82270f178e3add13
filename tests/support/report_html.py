"""The agreement report (report.html): its embedded images, decoded."""
import base64
import io
import re

from PIL import Image

_IMAGE = re.compile(r'<img alt="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">')


def decoded_images(path):
  """[(alt text, PIL image)] of the report's embedded images, each fully decoded;
  fails on anything external."""
  page = path.read_text(encoding="utf-8")
  assert "<script" not in page
  assert not re.search(r'(src|href)="(?!data:)', page), "an external resource"
  images = []
  for alt, data in _IMAGE.findall(page):
    image = Image.open(io.BytesIO(base64.b64decode(data, validate=True)))
    image.load()  # decodes every pixel: a truncated PNG raises here
    assert image.format == "PNG" and min(image.size) >= 100
    darkest, lightest = image.convert("L").getextrema()
    assert darkest < 100 < lightest, alt  # something is drawn
    images.append((alt, image))
  assert len(images) == page.count("<img ")
  return images
