-- fusion-switch language server for Neovim 0.7+ without plugins.
--
-- Copy this file to ~/.config/nvim/lua/fusion_switch.lua and add to init.lua:
--
--   require('fusion_switch').setup({
--     settings = { fusionSwitch = { target = 'Ascend950PR_9599' } },
--   })
--
-- Files named fusion_switch*.cfg or *.fusion_switch.cfg get filetype `fusion_switch` (JSON
-- highlighting) and the server `fusion-switch serve` (or $FUSION_SWITCH_SERVER_CMD, or the `cmd`
-- option). Commands: :FusionSwitchCompare, :FusionSwitchCancelCompare, :FusionSwitchApplySuspects,
-- :FusionSwitchAllOff, :FusionSwitchRestore, :FusionSwitchShowReport,
-- :FusionSwitchReloadCatalogue, :FusionSwitchTarget {name}.
-- Uses vim.lsp.start on Neovim 0.8+, vim.lsp.start_client + buf_attach_client on 0.7.
-- :FusionSwitchCompare runs in the background; its progress ($/progress) is echoed and
-- :FusionSwitchCancelCompare cancels it. :FusionSwitchAllOff and :FusionSwitchApplySuspects ask
-- first (vim.ui.select).

local M = {}

M.filetype = 'fusion_switch'
M.patterns = { 'fusion_switch*.cfg', '*.fusion_switch.cfg' }
M.root_markers = { '.git', '.vscode' }

local defaults = {
  -- Command that starts the server over stdio; nil: $FUSION_SWITCH_SERVER_CMD (split on
  -- whitespace) or { 'fusion-switch', 'serve' }.
  cmd = nil,
  settings = {
    fusionSwitch = {
      target = '',
      catalogue = { extraFiles = {} },
      compare = { onDump = '', offDump = '', onGraph = '', offGraph = '', output = '',
        memoryBudget = '', workers = 0, rank = '', iteration = '', step = '' },
    },
  },
  on_attach = nil, -- function(client, bufnr), e.g. your keymaps
}

local config = vim.deepcopy(defaults)
local clients_by_root = {} -- Neovim 0.7: one client per root directory
local failed_starts = {} -- messages of server commands that could not start, said once

--- Running server tasks by progress token: { title, message, percentage, cancellable, client_id }.
M.progress = {}
--- Functions called with (token, value) on every $/progress; the default echoes it.
M.progress_listeners = {}

local function on_progress(err, result, ctx, handler_config)
  local default = vim.lsp.handlers['$/progress']
  if default then
    pcall(default, err, result, ctx, handler_config)
  end
  if not result or not result.value then
    return
  end
  local token, value = result.token, result.value
  local task = M.progress[token] or { client_id = ctx.client_id }
  task.title = value.title or task.title or 'fusion-switch'
  task.message = value.message or task.message or ''
  task.percentage = value.percentage or task.percentage
  if value.kind == 'begin' then
    task.cancellable = value.cancellable == true
  end
  M.progress[token] = value.kind ~= 'end' and task or nil
  local suffix = value.kind == 'end' and ' (done)'
    or (task.percentage and string.format(' %d%%', task.percentage) or '')
  vim.api.nvim_echo({ { task.title .. ': ' .. task.message .. suffix } }, false, {})
  for _, listener in ipairs(M.progress_listeners) do
    listener(token, value)
  end
end

-- Client methods are called with `:` from 0.11 on (the `.` form is deprecated there).
local function call(client, method, ...)
  if vim.fn.has('nvim-0.11') == 1 then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function fusion_clients(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ name = 'fusion-switch', bufnr = bufnr })
  end
  local found = {}
  local all = bufnr and vim.lsp.buf_get_clients(bufnr) or vim.lsp.get_active_clients()
  for _, client in pairs(all) do
    if client.name == 'fusion-switch' then
      table.insert(found, client)
    end
  end
  return found
end

local function server_cmd()
  if config.cmd then
    return config.cmd
  end
  local from_env = os.getenv('FUSION_SWITCH_SERVER_CMD')
  if from_env and from_env:match('%S') then
    return vim.split(vim.trim(from_env), '%s+')
  end
  return { 'fusion-switch', 'serve' }
end

--- The nearest folder above the file holding a root marker, else the file's folder.
local function root_dir(bufnr)
  local file = vim.api.nvim_buf_get_name(bufnr)
  local start = vim.fn.fnamemodify(file, ':p:h')
  local dir = start
  while dir and dir ~= '' do
    for _, marker in ipairs(M.root_markers) do
      if vim.loop.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      break
    end
    dir = parent
  end
  return start
end

local function client_config(root)
  return {
    name = 'fusion-switch',
    cmd = server_cmd(),
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ':t') } },
    settings = config.settings,
    init_options = config.settings,
    handlers = { ['$/progress'] = on_progress },
    on_init = function(client)
      if vim.fn.has('nvim-0.8') == 0 then
        -- 0.7 does not send settings by itself.
        call(client, 'notify', 'workspace/didChangeConfiguration', { settings = config.settings })
      end
      return true
    end,
    on_attach = config.on_attach,
  }
end

--- The settings sent to the server (the `settings` option merged over the defaults).
function M.settings()
  return config.settings
end

--- Starts (or reuses) the server for the buffer's root folder and attaches it.
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root = root_dir(bufnr)
  if vim.lsp.start then
    return vim.lsp.start(client_config(root), { bufnr = bufnr })
  end
  local id = clients_by_root[root]
  local client = id and vim.lsp.get_client_by_id(id)
  if not client or call(client, 'is_stopped') then
    id = vim.lsp.start_client(client_config(root))
    if not id then
      -- said once per command, after the autocommand (an error raised inside it came with a
      -- stack traceback on Neovim 0.7, once per buffer)
      local message = 'fusion-switch: cannot start ' .. table.concat(server_cmd(), ' ') ..
        ' (install it with `pip install fusion-switch`)'
      if not failed_starts[message] then
        failed_starts[message] = true
        vim.schedule(function() vim.notify(message, vim.log.levels.ERROR) end)
      end
      return nil
    end
    clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

--- The fusion-switch client attached to the buffer, if any.
function M.client(bufnr)
  return fusion_clients(bufnr or vim.api.nvim_get_current_buf())[1]
end

--- Runs a server command on the buffer's configuration; `extra` adds to its argument object.
function M.execute(command, bufnr, extra, on_result)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    vim.notify('fusion-switch: no server attached to this buffer', vim.log.levels.WARN)
    return
  end
  local argument = vim.tbl_extend('force', { cfgUri = vim.uri_from_bufnr(bufnr) }, extra or {})
  local params = { command = command, arguments = { argument } }
  call(client, 'request', 'workspace/executeCommand', params, function(err, result)
    if on_result then
      return on_result(err, result)
    end
    if err then
      vim.notify(command .. ': ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif result ~= nil and result ~= vim.NIL then
      vim.notify(command .. ': ' .. vim.inspect(result), vim.log.levels.INFO)
    end
  end, bufnr)
end

--- Finds the guilty rules by running `job` (a shell command line; {cfg} is this file, saved
--- first) with rules switched off; the candidates are the rules that fired per
--- `fusion_result` (a fusion_result.json; nil: the one next to the file). Asynchronous:
--- :FusionSwitchCancelBisect stops it and puts the file back.
function M.bisect(job, fusion_result, bufnr, on_result)
  -- a shell command line, run by sh as typed (variables, pipes, quotes), {cfg} the trial's
  -- path however it is quoted (the server's workflow.trials.shell_command)
  local extra = { job = job, shell = true }
  if fusion_result and fusion_result ~= '' then
    extra.fusionResult = vim.fn.fnamemodify(fusion_result, ':p')
  else
    extra.allFired = true
  end
  M.execute('fusionSwitch.bisect', bufnr, extra, on_result)
end

--- Changes fusionSwitch.target for every running fusion-switch client.
function M.set_target(target)
  config.settings.fusionSwitch.target = target
  for _, client in ipairs(fusion_clients(nil)) do
    client.config.settings = config.settings
    call(client, 'notify', 'workspace/didChangeConfiguration', { settings = config.settings })
  end
end

--- Cancels the running comparison: its cancellable progress token, else fusionSwitch.cancelCompare.
--- Only a comparison's token: :FusionSwitchCancelBisect stops a bisection.
function M.cancel_compare(bufnr)
  for token, task in pairs(M.progress) do
    local comparing = type(token) == 'string' and token:find('^fusionSwitch/compare/') ~= nil
    local client = comparing and task.cancellable and vim.lsp.get_client_by_id(task.client_id)
    if client then
      call(client, 'notify', 'window/workDoneProgress/cancel', { token = token })
      return
    end
  end
  M.execute('fusionSwitch.cancelCompare', bufnr)
end

local questions = {
  ['fusionSwitch.allOff'] = { 'Switch all fusion off in this file?', 'Switch all off' },
  ['fusionSwitch.applySuspects'] = { 'Turn the suspected rules off in this file?', 'Turn off' },
}

--- Runs a command that rewrites the file only after the user agrees (vim.ui.select).
function M.confirm_and_execute(command, bufnr, on_result)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local question, yes = unpack(questions[command])
  vim.ui.select({ yes, 'Cancel' }, { prompt = question }, function(choice)
    if choice == yes then
      M.execute(command, bufnr, nil, on_result)
    elseif on_result then
      on_result(nil, { cancelled = true, asked = true })
    end
  end)
end

local user_commands = {
  FusionSwitchCompare = 'fusionSwitch.compare',
  FusionSwitchCancelBisect = 'fusionSwitch.cancelBisect',
  FusionSwitchRestore = 'fusionSwitch.restore',
  FusionSwitchShowReport = 'fusionSwitch.showReport',
  FusionSwitchReloadCatalogue = 'fusionSwitch.reloadCatalogue',
}

function M.setup(opts)
  config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  local group = vim.api.nvim_create_augroup('fusion_switch', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufRead', 'BufNewFile' }, {
    group = group,
    pattern = M.patterns,
    callback = function(args)
      vim.bo[args.buf].filetype = M.filetype
    end,
  })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = M.filetype,
    callback = function(args)
      vim.bo[args.buf].syntax = 'json'
      M.attach(args.buf)
    end,
  })
  for name, command in pairs(user_commands) do
    vim.api.nvim_create_user_command(name, function()
      M.execute(command)
    end, { desc = command })
  end
  -- the job's command line, as typed (it needs one: the command sent none, a review)
  vim.api.nvim_create_user_command('FusionSwitchBisect', function(args)
    M.bisect(args.args)
  end, { nargs = '+', complete = 'shellcmd', desc = 'fusionSwitch.bisect JOB ({cfg}: the file)' })
  vim.api.nvim_create_user_command('FusionSwitchCancelCompare', function()
    M.cancel_compare()
  end, { desc = 'fusionSwitch.cancelCompare' })
  for name, command in pairs({
    FusionSwitchAllOff = 'fusionSwitch.allOff',
    FusionSwitchApplySuspects = 'fusionSwitch.applySuspects',
  }) do
    vim.api.nvim_create_user_command(name, function()
      M.confirm_and_execute(command)
    end, { desc = command .. ' (asks first)' })
  end
  vim.api.nvim_create_user_command('FusionSwitchTarget', function(args)
    M.set_target(args.args)
  end, { nargs = '?', desc = 'Set fusionSwitch.target (empty: none)' })
end

return M
