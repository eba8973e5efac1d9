-- Latch's Lua sandbox, run once when the VM is created (chunk name "@latch_internal": the error
-- handler skips frames from this chunk so positions point at the user's script, as in Redis).
local rt, G = ...
local rt_getinfo = rt.getinfo
local type, tostring, error, rawpcall, select, rawget, rawset_ = type, tostring, error, pcall, select, rawget, rawset
local setmetatable_, getmetatable_ = setmetatable, getmetatable
local sub, find = string.sub, string.find

-- Read-only proxies. Lua 5.1 has no read-only tables (Redis patches its Lua for that), so every
-- protected table is an empty proxy reading through to the real one.
local protected = setmetatable_({}, { __mode = 'k' })
local proxy_mt_of = setmetatable_({}, { __mode = 'k' })

local function ro_error()
  error('Attempt to modify a readonly table', 2)
end

local function missing(k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 3)
end

local function protect(t, strict, seen)
  seen = seen or {}
  if seen[t] then return seen[t] end
  local p = {}
  seen[t] = p
  for k, v in next, t do
    if type(v) == 'table' and v ~= G then t[k] = protect(v, false, seen) end
  end
  local mt
  if strict then
    -- Hits are plain table reads through the proxy's __index table; only a miss reaches the
    -- function, set as the metatable of the protected table itself (which scripts cannot reach).
    local function index(_, k) missing(k) end
    setmetatable_(t, { __index = index })
    mt = { __index = t, __newindex = ro_error }
    proxy_mt_of[p] = protect({ __index = index }, false, seen)
  else
    mt = { __index = t, __newindex = ro_error }
  end
  setmetatable_(p, mt)
  protected[p] = t
  return p
end

local function pusherr(buf)
  local code, msg = 'ERR', buf
  if sub(buf, 1, 1) == '-' then
    local sp = find(buf, ' ', 1, true)
    if sp then
      code, msg = sub(buf, 2, sp - 1), sub(buf, sp + 1)
    else
      msg = sub(buf, 2)
    end
  end
  msg = msg:gsub('^[\r\n]+', ''):gsub('[\r\n]+$', '')
  return { err = code .. ' ' .. msg }
end

local function handler(err)
  local lvl, i = 2, nil
  while true do
    local what, source, line = rt_getinfo(lvl)
    if not what then i = nil break end
    i = { what = what, source = source, currentline = line }
    if what ~= 'C' and what ~= 'tail' and source ~= '@latch_internal' then break end
    lvl = lvl + 1
  end
  if type(err) == 'userdata' then
    local r = rt.take_raised()
    if r ~= nil then err = r end
  end
  if type(err) ~= 'table' then
    if rt.killed() then
      err = { err = 'ERR Script killed by user with SCRIPT KILL...' }
    else
      err = { err = 'ERR ' .. tostring(err) }
    end
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end

local redis = {
  REDIS_VERSION = rt.version,
  REDIS_VERSION_NUM = rt.version_num,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
}

redis.sha1hex = rt.sha1hex

function redis.error_reply(...)
  if select('#', ...) ~= 1 or type((...)) ~= 'string' then return pusherr('wrong number or type of arguments') end
  local e = ...
  if sub(e, 1, 1) ~= '-' then e = '-' .. e end
  return pusherr(e)
end

function redis.status_reply(...)
  if select('#', ...) ~= 1 or type((...)) ~= 'string' then return pusherr('wrong number or type of arguments') end
  return { ok = (...) }
end

local log = rt.log
redis.log = log
redis.setresp = rt.setresp
redis.set_repl = rt.set_repl

function redis.replicate_commands() return true end
redis.breakpoint = rt.breakpoint
redis.debug = rt.debug

redis.acl_check_cmd = rt.acl_check_cmd

G.redis = redis
G.bit = rt.bit
G.cjson = rt.cjson
G.struct = rt.struct
G.cmsgpack = rt.cmsgpack
G.math.random = rt.random
G.math.randomseed = rt.randomseed

G.pcall = function(f, ...)
  local function fix(ok, ...)
    if ok then return ok, ... end
    if rt.killed() then error((...), 0) end
    local e = ...
    if type(e) == 'userdata' then
      local r = rt.take_raised()
      if r ~= nil then e = r end
    end
    if type(e) == 'table' then
      local m = rawget(e, 'err')
      if type(m) == 'string' or type(m) == 'number' then e = m end
    end
    return false, e
  end
  return fix(rawpcall(f, ...))
end

local PG -- the protected globals
local string_mt, string_mt_proxy = getmetatable_(''), nil -- the strings' shared metatable
-- setmetatable, getmetatable and rawset are C functions set by the host (raw.rs) after this chunk:
-- they refuse to change what `protected` holds and show the views of the proxies' and strings'
-- metatables, with Lua's own argument errors.
-- loadstring and load are C functions set by the host (raw.rs) after this chunk: text chunks only,
-- through the one check every compiled chunk passes (chunk.rs), with PG as their globals.
G.getfenv, G.setfenv, G.print, G.dofile, G.loadfile, G.module, G.require = nil, nil, nil, nil, nil, nil, nil
G.debug, G.os, G.io, G.package = nil, nil, nil, nil
-- Redis's Lua has no newproxy: it is the only way a script could make userdata, whose __gc would
-- run at any later allocation (and could loop there, out of reach of SCRIPT KILL).
G.newproxy = nil

-- Redis's EVAL error handler is a global of that name (scripts can see and call it).
G.__redis__err__handler = handler

PG = protect(G, true)
rawset_(G, '_G', PG)
-- Strings share one metatable, reachable from any script through getmetatable(''): scripts get a
-- read-only view of it, whose __index is the read-only string library (as in Redis), so no script
-- can change string methods for the scripts after it.
local string_proxy = rawget(G, 'string')
string_mt.__index = string_proxy
string_mt_proxy = protect(string_mt, false, { [string_proxy] = string_proxy })

-- Function libraries: during FUNCTION LOAD the globals are only `redis` with register_function,
-- log and the version; when functions run they are the ordinary globals.
local load_redis = protect({
  register_function = rt.register_function,
  log = log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = rt.version,
  REDIS_VERSION_NUM = rt.version_num,
}, true)
local load_globals = { redis = load_redis }
local fglobals = G -- replaced by seal_functions_env
local fsrc = G
local FG = setmetatable_({}, { __index = function(_, k)
  local v = rawget(fsrc, k)
  if v == nil then missing(k) end
  return v
end, __newindex = ro_error })
proxy_mt_of[FG] = proxy_mt_of[PG]

local function set_load_mode(on)
  if on then fsrc = load_globals else fsrc = fglobals end
end

-- Functions see the globals without EVAL's error handler (Redis runs them in a VM of their own).
-- Called by the host once the globals are final.
local function seal_functions_env()
  local fg = {}
  for k, v in next, G do
    if k ~= '__redis__err__handler' then fg[k] = v end
  end
  fg._G = FG
  fglobals, fsrc = fg, fg
  protected[FG] = fg
end

local function run_load(f)
  return xpcall(f, handler)
end

local sandbox = {
  protected = protected, proxy_mt_of = proxy_mt_of, string_mt = string_mt, string_mt_proxy = string_mt_proxy,
}
return PG, FG, handler, run_load, set_load_mode, redis, protected, seal_functions_env, sandbox
