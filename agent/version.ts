/** The agent's version, reported in `hello`. */
export const AGENT_VERSION = "0.1.0";
