// Tiny Python packages written into a session with file_write, so pip can
// install them offline (setuptools from the image, --no-build-isolation).

/** Writes an installable package `name` (module of the same name, VALUE = value) under dir. */
export async function writePackage(srv, sid, dir, name, version, value) {
  await srv.ok('file_write', {
    session_id: sid, path: `${dir}/pyproject.toml`,
    content: '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n' +
      `[project]\nname = "${name}"\nversion = "${version}"\n\n[tool.setuptools]\npackages = ["${name}"]\n`,
  });
  await srv.ok('file_write', {
    session_id: sid, path: `${dir}/${name}/__init__.py`, content: `VALUE = ${JSON.stringify(value)}\n`,
  });
}
