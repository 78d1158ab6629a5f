"""mkdocs hook: the README is the site's home page (one text, not two), its links to docs/ pages made relative."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File


def on_files(files, config):
    readme = Path(config["config_file_path"]).parent / "README.md"
    text = readme.read_text().replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=text))
    return files
