// Reading a job-written file (a checkpoint, a TensorBoard event file) without being led out of
// its folder. A job can plant a link (`ckpt/x.pt -> /root/.gpuctl/server.yaml`) where the
// agent, possibly root, reads; so a file is read only when its real path lies inside the
// watched folder, and the file opened is the one that was checked (same device and inode: a
// link swapped in between is not read).

/** An open regular file inside the folder; `outside`: not read (a link out); `gone`: vanished. */
export type Opened = { file: Deno.FsFile; size: number; ino: number | null } | "outside" | "gone";

/** Opens `path` for reading if it resolves to a regular file inside `root`. */
export async function openInside(path: string, root: string): Promise<Opened> {
  let real: string;
  let realRoot: string;
  try {
    [real, realRoot] = await Promise.all([Deno.realPath(path), Deno.realPath(root)]);
  } catch {
    return "gone";
  }
  if (!real.startsWith(realRoot.endsWith("/") ? realRoot : `${realRoot}/`)) return "outside";
  let file: Deno.FsFile;
  let before: Deno.FileInfo;
  try {
    before = await Deno.lstat(real);
    if (!before.isFile) return "outside";
    file = await Deno.open(real, { read: true });
  } catch {
    return "gone";
  }
  const after = await file.stat();
  if (!after.isFile || after.ino !== before.ino || after.dev !== before.dev) {
    file.close();
    return "outside";
  }
  return { file, size: after.size, ino: after.ino };
}
