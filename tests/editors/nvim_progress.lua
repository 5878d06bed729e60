-- Headless Neovim with client-config/neovim/fusion_switch.lua: the comparison runs in the
-- background with $/progress, cancel stops it, all-off asks through vim.ui.select.
-- Inputs: FS_CONFIG_DIR, FS_PYTHON, FS_FILE, FS_OUT, FS_ON_DUMP, FS_OFF_DUMP, FS_ON_GRAPH,
-- FS_OFF_GRAPH, FS_OUTPUT.
local env = function(name) return os.getenv(name) end
local out = { errors = {}, events = {}, questions = {} }

local ok, err = pcall(function()
  package.path = env('FS_CONFIG_DIR') .. '/?.lua;' .. package.path
  local fs = require('fusion_switch')
  fs.setup({
    cmd = { env('FS_PYTHON'), '-m', 'fusion_switch', 'serve' },
    settings = { fusionSwitch = { compare = {
      onDump = env('FS_ON_DUMP'), offDump = env('FS_OFF_DUMP'),
      onGraph = env('FS_ON_GRAPH'), offGraph = env('FS_OFF_GRAPH'), output = env('FS_OUTPUT'),
    } } },
  })
  table.insert(fs.progress_listeners, function(_, value)
    table.insert(out.events, value.kind)
  end)
  vim.cmd('edit ' .. vim.fn.fnameescape(env('FS_FILE')))
  local buf = vim.api.nvim_get_current_buf()
  out.attached = vim.wait(20000, function() return fs.client(buf) ~= nil end, 50)
  vim.wait(20000, function() return fs.client(buf).initialized ~= false end, 50)
  vim.wait(1000)

  -- 1. in the background, with progress
  local done, result = false, nil
  fs.execute('fusionSwitch.compare', buf, nil, function(e, r) done, result = true, r or e end)
  out.returned_before_done = not done
  out.finished = vim.wait(120000, function() return done end, 50)
  out.compare_result = result

  -- 2. cancel as soon as a cancellable task is reported
  done, result = false, nil
  fs.execute('fusionSwitch.compare', buf, nil, function(e, r) done, result = true, r or e end)
  out.cancellable_seen = vim.wait(60000, function()
    for _, task in pairs(fs.progress) do
      if task.cancellable then return true end
    end
    return done
  end, 20) and not done
  fs.cancel_compare(buf)
  vim.wait(60000, function() return done end, 50)
  out.cancel_result = result

  -- 3. all-off asks: "Cancel" leaves the buffer, the yes-choice switches everything off
  local before = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  local answer = 'Cancel'
  vim.ui.select = function(items, opts, on_choice)
    table.insert(out.questions, { prompt = opts.prompt, items = items })
    on_choice(answer == 'yes' and items[1] or 'Cancel')
  end
  local replied = false
  fs.confirm_and_execute('fusionSwitch.allOff', buf, function() replied = true end)
  vim.wait(5000, function() return replied end, 50)
  out.unchanged_after_no = before == table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  answer, replied = 'yes', false
  fs.confirm_and_execute('fusionSwitch.allOff', buf, function() replied = true end)
  vim.wait(20000, function() return replied end, 50)
  local after = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  out.all_off_after_yes = after:find('"ALL": "off"', 1, true) ~= nil
end)
if not ok then table.insert(out.errors, tostring(err)) end
local f = io.open(env('FS_OUT'), 'w')
f:write(vim.fn.json_encode(out))
f:close()
vim.cmd('qa!')
