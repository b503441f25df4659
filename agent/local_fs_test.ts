import { assert, assertEquals } from "../tests/assert.ts";
import { deviceName, isLocalDevice, LOCAL_FS_TYPES, mountTypes } from "./local_fs.ts";

Deno.test("deviceName() writes st_dev as mountinfo's major:minor", () => {
  assertEquals(deviceName(65024), "254:0");
  assertEquals(deviceName(2049), "8:1");
  // makedev(8, 300): the minor's high bits sit above the major's.
  assertEquals(deviceName(0x10082c), "8:300");
});

Deno.test("mountTypes() reads each mount's device and type, optional fields or not", () => {
  const types = mountTypes([
    "26 1 254:0 / / rw,relatime - ext4 /dev/vda rw",
    "36 35 0:52 / /mnt/nfs rw,relatime shared:7 master:1 - nfs4 server:/export rw",
    "37 35 0:53 / /mnt/fuse rw - fuse.sshfs host: rw",
    "",
  ].join("\n"));
  assertEquals([...types], [["254:0", "ext4"], ["0:52", "nfs4"], ["0:53", "fuse.sshfs"]]);
});

Deno.test("isLocalDevice() answers from the mount table, and no for a device no mount has", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const dev = (await Deno.stat(dir)).dev;
    const type = mountTypes(Deno.readTextFileSync("/proc/self/mountinfo")).get(deviceName(dev));
    assertEquals(isLocalDevice(dev), type !== undefined && LOCAL_FS_TYPES.has(type));
    assert(!isLocalDevice(0xfff_fff0));
  } finally {
    await Deno.remove(dir);
  }
});
